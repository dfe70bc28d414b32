// Package webhook sends signed webhooks in the Standard Webhooks format
// (https://www.standardwebhooks.com): a JSON body {"type","timestamp","data"}
// posted with the headers webhook-id, webhook-timestamp and
// webhook-signature, an HMAC-SHA256 of the id, the timestamp and the body
// under the endpoint's secret. Any Standard Webhooks library verifies
// them.
//
//	sender, err := webhook.New(&webhook.Options{Endpoints: []webhook.Endpoint{{
//		Name:   "approvals-relay",
//		URL:    "https://relay.example.com/toolgate",
//		Secret: os.Getenv("TOOLGATE_WEBHOOK_SECRET"), // "whsec_…"
//	}}})
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer sender.Close()
//	id, err := sender.Send("pause.paused", map[string]string{"pause_id": "pause_P"})
//
// # Delivery
//
// [Sender.Send] queues the message and returns at once; one worker per
// endpoint posts it. An answer other than 2xx, or none within
// [Options.Timeout], is retried after a wait that doubles from
// [Options.MinBackoff] to [Options.MaxBackoff], up to [Options.MaxAttempts]
// attempts in all (by default 12 attempts over about 27 minutes); then
// the message is given up as failed. Redirects are not followed.
//
// Delivery is at least once: a receiver that took a message but whose
// answer was lost gets it again, with the same webhook-id, which it
// should use to ignore duplicates. Each endpoint gets its messages in the
// order they were sent, since a message being retried holds back the
// later ones (a receiver that is down delays, but does not reorder). The
// queues and the delivery log are in memory, bounded by
// [Options.QueueSize] and [Options.LogSize]: messages still queued when the
// process exits are lost, and a message that finds its endpoint's queue
// full is dropped and logged so.
//
// [Sender.Deliveries] is the delivery log: per message and endpoint, its
// status, attempts, last answer and times. Neither the log nor log lines
// show an endpoint's URL, which may itself be a secret; endpoints are
// named.
package webhook
