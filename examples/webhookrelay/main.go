// Command webhookrelay receives the webhooks of toolgate serve and tells
// the approvers: in a Slack channel (an incoming webhook) or by e-mail.
// It is a recipe to copy and adapt, not a supported product.
//
//	TOOLGATE_WEBHOOK_SECRET=whsec_… SLACK_WEBHOOK_URL=https://hooks.slack.com/services/… \
//	  go run ./examples/webhookrelay -addr :9000
//
//	TOOLGATE_WEBHOOK_SECRET=whsec_… SMTP_ADDR=smtp.example.com:587 SMTP_USER=… SMTP_PASSWORD=… \
//	  go run ./examples/webhookrelay -addr :9000 -mail-from toolgate@example.com -mail-to approvers@example.com
//
// Every message is verified (signature and timestamp) before it is used,
// and messages seen before (the same webhook-id, as retries send it) are
// ignored.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/smtp"
	"os"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// message is the part of toolgate's webhooks the relay reads.
type message struct {
	Type string `json:"type"`
	Data struct {
		ConversationID string `json:"conversation_id"`
		PauseID        string `json:"pause_id"`
		Agent          string `json:"agent"`
		Requester      string `json:"requester"`
		Link           string `json:"link"`
		Calls          []struct {
			Tool     string `json:"tool"`
			Awaiting bool   `json:"awaiting"`
		} `json:"calls"`
		Decision *struct {
			Source    string `json:"source"`
			DecidedBy string `json:"decided_by"`
			Outcome   string `json:"outcome"`
		} `json:"decision"`
	} `json:"data"`
}

// text is the one-line notice of m.
func (m *message) text() string {
	d := m.Data
	switch m.Type {
	case "pause.paused":
		var tools []string
		for _, c := range d.Calls {
			if c.Awaiting {
				tools = append(tools, c.Tool)
			}
		}
		return fmt.Sprintf("%s asks to run %s (agent %s). Decide: %s", d.Requester, strings.Join(tools, ", "), d.Agent, d.Link)
	case "pause.decided":
		by := d.Decision.DecidedBy
		if by == "" {
			by = "a " + d.Decision.Source + " approval"
		}
		return fmt.Sprintf("Decided by %s (%s): %s", by, d.Decision.Outcome, d.Link)
	case "pause.expired":
		return fmt.Sprintf("Expired undecided: %s", d.Link)
	}
	return m.Type + ": " + d.Link
}

func main() {
	addr := flag.String("addr", ":9000", "listen `address`")
	from := flag.String("mail-from", "", "send e-mail from this `address` (SMTP_ADDR, SMTP_USER, SMTP_PASSWORD)")
	to := flag.String("mail-to", "", "send e-mail to this `address`")
	flag.Parse()
	verifier, err := standardwebhooks.NewWebhook(os.Getenv("TOOLGATE_WEBHOOK_SECRET"))
	if err != nil {
		log.Fatalf("TOOLGATE_WEBHOOK_SECRET: %v", err)
	}
	var notify func(subject, text string) error
	switch {
	case *to != "":
		notify = mailer(*from, *to)
	case os.Getenv("SLACK_WEBHOOK_URL") != "":
		notify = slack(os.Getenv("SLACK_WEBHOOK_URL"))
	default:
		log.Fatal("set SLACK_WEBHOOK_URL, or -mail-from and -mail-to")
	}
	var mu sync.Mutex
	seen := map[string]time.Time{}
	http.HandleFunc("POST /toolgate", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || verifier.Verify(body, r.Header) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		id := r.Header.Get("webhook-id")
		mu.Lock()
		dup := !seen[id].IsZero()
		seen[id] = time.Now()
		for k, t := range seen { // forget ids older than a day
			if time.Since(t) > 24*time.Hour {
				delete(seen, k)
			}
		}
		mu.Unlock()
		if dup {
			return // a retry of a message already relayed
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			http.Error(w, "not a toolgate message", http.StatusBadRequest)
			return
		}
		if err := notify("toolgate: "+m.Type, m.text()); err != nil {
			mu.Lock()
			delete(seen, id) // let toolgate's retry try again
			mu.Unlock()
			log.Printf("notifying: %v", err)
			http.Error(w, "notification failed", http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}

// slack posts to a Slack incoming webhook.
func slack(url string) func(subject, text string) error {
	client := &http.Client{Timeout: 10 * time.Second}
	return func(_, text string) error {
		body, _ := json.Marshal(map[string]string{"text": text})
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("slack answered %d", resp.StatusCode)
		}
		return nil
	}
}

// mailer sends e-mail through the SMTP server of SMTP_ADDR.
func mailer(from, to string) func(subject, text string) error {
	addr := os.Getenv("SMTP_ADDR")
	host, _, _ := strings.Cut(addr, ":")
	auth := smtp.PlainAuth("", os.Getenv("SMTP_USER"), os.Getenv("SMTP_PASSWORD"), host)
	return func(subject, text string) error {
		msg := "From: " + from + "\r\nTo: " + to + "\r\nSubject: " + subject + "\r\n\r\n" + text + "\r\n"
		return smtp.SendMail(addr, auth, from, []string{to}, []byte(msg))
	}
}
