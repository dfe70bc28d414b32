// toolgate pages. Every value from the API may be attacker-controlled (tool
// arguments, model text, ids): the DOM is built with createElement and
// text nodes only (never parsed as HTML), and links are built from
// encodeURIComponent'd ids.
'use strict';

(() => {
  const body = document.body;
  const page = body.dataset.page;
  const convID = body.dataset.conversation || '';
  const pauseID = body.dataset.pause || '';

  // el builds an element: attrs are set as attributes (text values only),
  // children are nodes or strings (added as text).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v === null || v === undefined) continue;
      e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      e.append(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }

  function announce(msg) {
    const live = document.getElementById('live');
    if (live) live.textContent = msg;
  }

  function setText(id, text) {
    const e = document.getElementById(id);
    if (!e) return;
    e.textContent = text;
    e.hidden = text === '';
  }

  function convPath(id) { return '/conversations/' + encodeURIComponent(id); }
  function apiConv(id) { return '/v1' + convPath(id); }

  // api calls the JSON API with the session cookie. It returns
  // {status, data}; a 401 sends the browser to the sign-in page.
  async function api(method, path, payload) {
    const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
    if (payload !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(payload);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (err) {
      return { status: 0, data: { error: 'network', message: 'The server could not be reached.' } };
    }
    let data = {};
    try { data = await resp.json(); } catch (err) { data = {}; }
    if (resp.status === 401) {
      location.assign('/signin?next=' + encodeURIComponent(location.pathname + location.search));
    }
    return { status: resp.status, data };
  }

  function errorText(r) {
    if (r.data && typeof r.data.message === 'string' && r.data.message) return r.data.message;
    return 'The request failed (status ' + r.status + ').';
  }

  // peopleText is errorText for the people who decide: the server's hint
  // when it gives one (which field, what is expected), and its message
  // without the library's prefix otherwise.
  function peopleText(r) {
    const d = r.data || {};
    if (typeof d.hint === 'string' && d.hint) return d.hint;
    return errorText(r).replace(/^toolgate: /, '').replace(/^./, (c) => c.toUpperCase());
  }

  // Privacy tokens such as [EMAIL_ADDRESS_1] stand for personal data the
  // model never saw.
  const tokenPattern = /\[[A-Z][A-Z0-9_]*_[0-9]+\]/g;

  // highlighted returns text as nodes, its privacy tokens in <mark>s.
  function highlighted(text) {
    const frag = document.createDocumentFragment();
    let last = 0;
    for (const m of text.matchAll(tokenPattern)) {
      if (m.index > last) frag.append(document.createTextNode(text.slice(last, m.index)));
      frag.append(el('mark', { class: 'token', title: 'privacy token: the original is kept from the model' }, m[0]));
      last = m.index + m[0].length;
    }
    if (last < text.length) frag.append(document.createTextNode(text.slice(last)));
    return frag;
  }

  function pretty(args) {
    if (!args) return '{}';
    try { return JSON.stringify(JSON.parse(args), null, 2); } catch (err) { return String(args); }
  }

  // resultText returns a tool result for reading: a typed tool's result is
  // JSON, often a single string, shown without its quotes.
  function resultText(content) {
    if (!content) return '';
    try {
      const v = JSON.parse(content);
      return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
    } catch (err) {
      return content;
    }
  }

  function argsBlock(args) {
    return el('pre', { class: 'args' }, highlighted(pretty(args)));
  }

  function duration(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + ' s';
    const m = Math.round(s / 60);
    if (m < 120) return m + ' min';
    return Math.round(m / 60) + ' h';
  }

  function timeEl(iso, text) {
    return el('time', { datetime: iso, title: new Date(iso).toLocaleString() }, text);
  }

  // Ages ("3 min ago") and times left ("12 min left") tick in the page:
  // one timer rewrites them every second from the clock, without asking
  // the server anything.
  function ageText(iso) { return duration(Date.now() - new Date(iso)) + ' ago'; }
  function leftText(iso) {
    const left = new Date(iso) - Date.now();
    return left > 0 ? duration(left) + ' left' : 'expired: leaving the list';
  }
  function ageEl(iso) {
    const e = timeEl(iso, ageText(iso));
    e.dataset.age = '';
    return e;
  }
  function leftEl(iso) {
    const e = timeEl(iso, leftText(iso));
    e.dataset.left = '';
    return e;
  }
  function tick() {
    for (const e of document.querySelectorAll('time[data-age]')) e.textContent = ageText(e.getAttribute('datetime'));
    for (const e of document.querySelectorAll('time[data-left]')) {
      e.textContent = leftText(e.getAttribute('datetime'));
      if (new Date(e.getAttribute('datetime')) <= Date.now()) e.classList.add('expired');
    }
  }
  setInterval(tick, 1000);

  // rolesText names who holds the roles, for people: "holders of role
  // approver", "holders of roles a or b".
  function rolesText(roles) {
    if (!roles || roles.length === 0) return 'nobody (no approval rule covers this call)';
    return 'holders of role' + (roles.length > 1 ? 's ' : ' ') + roles.join(' or ');
  }

  // reasonText says why a call awaits a decision.
  function reasonText(reason) {
    switch (reason) {
      case 'tool_requires_confirmation': return 'the tool is marked as needing a person\'s confirmation';
      case 'confirmation_policy': return 'the agent\'s confirmation policy asks for a decision on this call';
      default: return '';
    }
  }

  // ruleText describes an approval rule.
  function ruleText(r) {
    const parts = ['rule ' + r.index + ': ' + (r.tools && r.tools.length ? r.tools.join(', ') : 'every tool') + ' decided by ' + rolesText(r.roles)];
    if (r.requester_may_decide) parts.push('the requester may decide their own calls');
    if (r.approvers > 1) parts.push(r.approvers + ' approvers needed');
    if (r.sticky_max_minutes) parts.push('sticky approvals up to ' + r.sticky_max_minutes + ' min');
    return parts.join('; ');
  }

  function signedInAs() {
    const u = document.getElementById('user');
    return u ? u.textContent : '';
  }

  // follow keeps a page live: it calls refresh on every event of the
  // stream at url (resync included) and whenever the stream (re)opens, so
  // nothing between a fetch and the stream's start is missed. While the
  // stream is down (an error: the server refused it, or it reconnects), it
  // polls every fallbackMs instead. body's data-live says which it does.
  function follow(url, refresh, fallbackMs) {
    let timer = null;
    const polling = (on) => {
      if (on && !timer) timer = setInterval(refresh, fallbackMs);
      if (!on && timer) { clearInterval(timer); timer = null; }
      body.dataset.live = on ? 'polling' : 'events';
    };
    if (!window.EventSource) {
      polling(true);
      return;
    }
    const es = new EventSource(url);
    for (const kind of ['appended', 'paused', 'decided', 'expired', 'completed', 'resync']) {
      es.addEventListener(kind, () => { refresh(); });
    }
    es.onmessage = () => { refresh(); };
    es.onopen = () => { polling(false); refresh(); };
    es.onerror = () => { polling(true); };
  }

  // serialized returns fn that never runs twice at once: a call while it
  // runs makes it run once more afterwards, so the last call's state wins.
  function serialized(fn) {
    let running = null;
    let again = false;
    const run = async () => {
      if (running) {
        again = true;
        return running;
      }
      running = (async () => {
        do {
          again = false;
          await fn();
        } while (again);
      })();
      try { await running; } finally { running = null; }
    };
    return run;
  }

  // ---- conversations ------------------------------------------------------

  async function conversationsPage() {
    const form = document.getElementById('new-conversation');
    if (form) {
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        const button = form.querySelector('button');
        button.disabled = true;
        const r = await api('POST', '/v1/conversations', { agent: form.elements.agent.value });
        button.disabled = false;
        if (r.status === 201) {
          location.assign(convPath(r.data.id));
          return;
        }
        setText('new-error', errorText(r));
      });
    }
    const r = await api('GET', '/v1/conversations');
    const list = document.getElementById('conversations');
    if (r.status !== 200) {
      setText('conversations-status', errorText(r));
      return;
    }
    const convs = r.data.conversations || [];
    setText('conversations-status', convs.length ? '' : 'No conversations yet.');
    for (const c of convs.slice().reverse()) {
      list.append(el('li', { class: 'card' },
        el('a', { href: convPath(c.id) }, 'Conversation with ' + c.agent),
        el('span', { class: 'meta' }, ' · started ', timeEl(c.created_at, new Date(c.created_at).toLocaleString()),
          c.owner ? ' by ' + c.owner : '')));
    }
  }

  // ---- chat ---------------------------------------------------------------

  function messageItem(m, owner) {
    switch (m.role) {
      case 'user':
        return el('li', { class: 'msg user' }, el('div', { class: 'who' }, owner && owner !== signedInAs() ? 'Requester ' + owner : 'You'), el('div', { class: 'text' }, highlighted(m.text || '')));
      case 'assistant': {
        const li = el('li', { class: 'msg assistant' }, el('div', { class: 'who' }, 'Assistant'));
        if (m.text) li.append(el('div', { class: 'text' }, highlighted(m.text)));
        for (const c of m.tool_calls || []) {
          li.append(el('div', { class: 'call' }, el('span', { class: 'meta' }, 'Calls tool '), el('code', {}, c.name)), argsBlock(c.arguments));
        }
        return li;
      }
      case 'tool': {
        const li = el('li', { class: 'msg tool' }, el('div', { class: 'who' }, 'Tool results'));
        for (const res of m.results || []) {
          li.append(el('div', { class: 'result' },
            el('code', {}, res.name), ' ', el('span', { class: 'badge' }, res.status),
            el('div', { class: 'text' }, highlighted(resultText(res.content)))));
        }
        return li;
      }
      default:
        return null;
    }
  }

  function chatPage() {
    let last = '';
    const status = document.getElementById('chat-status');
    const list = document.getElementById('messages');
    const pauseBox = document.getElementById('pause');
    const pauseBody = document.getElementById('pause-body');
    const form = document.getElementById('send');
    const input = document.getElementById('input');

    function render(conv) {
      const msgs = conv.messages || [];
      const had = list.children.length;
      list.replaceChildren(...msgs.map((m) => messageItem(m, conv.owner)).filter(Boolean));
      const p = conv.pause;
      pauseBox.hidden = !p;
      pauseBody.replaceChildren();
      if (p) {
        if (p.approval) {
          pauseBody.append(el('p', { class: 'badge awaiting', id: 'second-approval' }, 'Approved by ' + p.approval.by + '; awaiting second approval by another approver.'));
        }
        for (const c of p.calls || []) {
          if (!c.awaiting) continue;
          pauseBody.append(el('p', {}, el('code', {}, c.tool), ' ', el('span', { class: 'badge awaiting' }, 'awaiting a decision')), argsBlock(c.arguments));
        }
        const d = p.deciders || { roles: [] };
        let who = rolesText(d.roles);
        if (d.requester_may_decide) who += d.roles.length ? ', or the requester' : 'the requester';
        pauseBody.append(el('p', { id: 'waiting-for' }, 'Waiting since ', timeEl(p.created_at, new Date(p.created_at).toLocaleString()),
          ' (', ageEl(p.created_at), ') for a decision by ', el('strong', {}, who), '.'));
        pauseBody.append(el('p', { class: 'meta', id: 'pause-expiry' }, p.expires_at
          ? el('span', {}, 'Expires at ', timeEl(p.expires_at, new Date(p.expires_at).toLocaleString()), ' (', leftEl(p.expires_at), ')')
          : 'This pause does not expire: it waits until somebody decides.'));
        if (d.may_decide) {
          pauseBody.append(el('p', {}, el('a', { href: convPath(conv.id) + '/pauses/' + encodeURIComponent(p.id), id: 'decide-link' }, 'Open the decision form')));
        }
      }
      if (form) form.querySelector('button').disabled = !!p;
      status.textContent = p ? 'The agent waits for a decision on a tool call.' : (msgs.length ? '' : (form ? 'No messages yet: say what you need.' : 'No messages yet.'));
      if (had && list.children.length !== had) {
        announce(p ? 'New messages; the agent waits for a decision.' : 'New messages.');
      }
    }

    const refresh = serialized(async () => {
      const r = await api('GET', apiConv(convID));
      if (r.status !== 200) {
        status.textContent = errorText(r);
        return;
      }
      const text = JSON.stringify([r.data.messages, r.data.pause, r.data.owner]);
      if (text !== last) {
        last = text;
        render(r.data);
      }
    });

    if (form) form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const text = input.value;
      if (!text.trim()) {
        setText('send-error', 'Write a message first.');
        input.focus();
        return;
      }
      setText('send-error', '');
      const button = form.querySelector('button');
      button.disabled = true;
      status.textContent = 'Sending…';
      const r = await api('POST', apiConv(convID) + '/messages', { input: text });
      button.disabled = false;
      if (r.status !== 200) {
        status.textContent = '';
        setText('send-error', errorText(r));
        await refresh();
        return;
      }
      input.value = '';
      await refresh();
    });

    // A hint about the message box goes once the message changes.
    if (input) input.addEventListener('input', () => { setText('send-error', ''); });

    // Live updates: the conversation's events; polling while they fail.
    follow(apiConv(convID) + '/events', refresh, 5000);
    refresh();
  }

  // ---- inbox and decisions -------------------------------------------------

  // grantsList returns a list of the live sticky grants of conversation
  // convID, filled in when they are read, each with a Revoke button when
  // the user may revoke it.
  function grantsList(convID) {
    const box = el('div', { class: 'grants' });
    const load = async () => {
      const r = await api('GET', apiConv(convID) + '/grants');
      box.replaceChildren();
      const grants = (r.status === 200 && r.data.grants) || [];
      if (grants.length === 0) return;
      const list = el('ul', { class: 'plain', 'aria-label': 'Sticky grants in this conversation' });
      for (const g of grants) {
        const row = el('li', { class: 'grant' }, 'Sticky grant: ', el('code', {}, g.tool),
          g.same_arguments ? ' (same arguments)' : '', ' by ', el('strong', {}, g.granted_by), ' until ',
          timeEl(g.expires_at, new Date(g.expires_at).toLocaleTimeString()));
        if (g.may_revoke) {
          const btn = el('button', { type: 'button', class: 'revoke' }, 'Revoke');
          btn.addEventListener('click', async () => {
            btn.disabled = true;
            const rr = await api('POST', apiConv(convID) + '/grants/' + encodeURIComponent(g.id) + '/revoke');
            if (rr.status !== 200) {
              row.append(el('p', { class: 'error', role: 'alert' }, errorText(rr)));
              btn.disabled = false;
              return;
            }
            await load();
          });
          row.append(' ', btn);
        }
        list.append(row);
      }
      box.append(list);
    };
    load();
    return box;
  }

  // pauseCard returns the inbox entry of item with its decision form.
  function pauseCard(item, onDone) {
    const id = 'p-' + item.pause_id.replace(/[^A-Za-z0-9_-]/g, '_');
    const card = el('li', { class: 'card pause-item', 'data-pause': item.pause_id, 'aria-labelledby': id + '-h' });
    const tools = (item.calls || []).filter((c) => c.awaiting).map((c) => c.tool);
    card.append(el('h2', { id: id + '-h' }, tools.join(', ') + ' for ' + item.requester));
    // What tells pauses apart: the conversation, who asked, and when.
    const meta = el('p', { class: 'meta' },
      'Requested by ', el('strong', {}, item.requester), ' with agent ', el('code', {}, item.agent),
      ' in ', el('a', { href: convPath(item.conversation_id), class: 'conv-link' }, 'conversation ', el('code', {}, item.conversation_id)), ' · ',
      ageEl(item.created_at), ' · ',
      item.expires_at ? leftEl(item.expires_at) : el('span', { class: 'no-expiry' }, 'does not expire'));
    card.append(meta);
    const ctx = item.context || { calls: [] };
    const why = new Map((ctx.calls || []).map((c) => [c.key, c]));
    if (ctx.request || ctx.said) {
      const dl = el('dl', { class: 'context' });
      if (ctx.request) dl.append(el('dt', {}, 'The user asked'), el('dd', { class: 'request' }, highlighted(ctx.request)));
      if (ctx.said) dl.append(el('dt', {}, 'The assistant said'), el('dd', { class: 'said' }, highlighted(ctx.said)));
      card.append(dl);
    }
    const n = (item.calls || []).length;
    if (n > 1) {
      card.append(el('p', { class: 'meta group' }, 'One reply of the assistant with ' + n + ' calls: they are decided together, and run after the decision.'));
    }
    if (Number.isInteger(item.sticky_max_minutes) && item.sticky_max_minutes > 0) {
      card.append(grantsList(item.conversation_id));
    }

    const form = el('form', { novalidate: true });
    if (item.keys_confusable) {
      // A call id that looks like another call's key: a client deciding
      // by id could decide the wrong call. Decisions here use the keys
      // shown next to each call.
      form.append(el('p', { class: 'error', role: 'note' },
        'Warning: the agent gave these calls ids that look like the keys of other calls. Check each call\'s key before you decide.'));
    }
    const rows = [];
    for (const call of item.calls || []) {
      const cid = id + '-' + rows.length;
      const keyTag = el('span', { class: 'meta' }, ' key ', el('code', { class: 'call-key' }, call.key));
      const cc = why.get(call.key) || {};
      const desc = cc.description ? el('p', { class: 'description' }, cc.description) : null;
      if (!call.awaiting) {
        form.append(el('div', { class: 'call' },
          el('code', {}, call.tool), keyTag, ' ', el('span', { class: 'badge' }, 'runs unless denied'), desc, argsBlock(call.arguments)));
        continue;
      }
      const fs = el('fieldset', { class: 'call' });
      fs.append(el('legend', {}, 'Call of ' + call.tool));
      fs.append(el('p', { class: 'meta' }, keyTag));
      if (desc) fs.append(desc);
      if (cc.reason) {
        const reason = el('p', { class: 'reason' }, 'Why it waits: ', reasonText(cc.reason), '.');
        if (cc.rules && cc.rules.length) reason.append(' ', el('span', { class: 'meta' }, cc.rules.map(ruleText).join(' · ')));
        fs.append(reason);
      }
      fs.append(argsBlock(call.arguments));
      const allow = el('input', { type: 'radio', name: cid + '-verdict', value: 'allow', id: cid + '-allow' });
      const deny = el('input', { type: 'radio', name: cid + '-verdict', value: 'deny', id: cid + '-deny' });
      fs.append(el('div', { role: 'radiogroup', 'aria-label': 'Decision on ' + call.tool },
        allow, el('label', { class: 'inline', for: cid + '-allow' }, 'Allow'),
        deny, el('label', { class: 'inline', for: cid + '-deny' }, 'Deny')));
      const maxMessage = Number.isInteger(item.max_deny_message) && item.max_deny_message > 0 ? item.max_deny_message : 2000;
      const msg = el('input', { type: 'text', id: cid + '-message', maxlength: maxMessage });
      const msgRow = el('div', { class: 'deny-message' }, el('label', { for: cid + '-message' }, 'Message to the agent (why it is denied; at most ' + maxMessage + ' characters)'), msg);
      msgRow.hidden = true;
      fs.append(msgRow);
      const original = pretty(call.arguments);
      const editor = el('textarea', { class: 'json', id: cid + '-args', spellcheck: 'false', 'aria-describedby': cid + '-args-error' });
      editor.value = original;
      const editorError = el('p', { class: 'error', id: cid + '-args-error', 'aria-live': 'polite' });
      editorError.hidden = true;
      const details = el('details', { class: 'edit' }, el('summary', {}, 'Edit the arguments before allowing'),
        el('label', { for: cid + '-args' }, 'Arguments (JSON object)'), editor, editorError);
      fs.append(details);
      const callError = el('p', { class: 'error', role: 'alert' });
      callError.hidden = true;
      fs.append(callError);
      const sync = () => {
        msgRow.hidden = !deny.checked;
        details.hidden = deny.checked;
        // A choice made: the hint asking for one goes.
        if (allow.checked || deny.checked) callError.hidden = true;
      };
      const row = { call, allow, deny, msg, editor, editorError, original, callError, details, sync };
      rows.push(row);
      allow.addEventListener('change', sync);
      deny.addEventListener('change', sync);
      editor.addEventListener('input', () => { checkEditor(row); });
      form.append(fs);
    }

    // A sticky grant, when a rule lets this user make every awaiting call
    // sticky: the server says for how many minutes at most.
    let sticky = null;
    const stickyMax = item.sticky_max_minutes;
    if (Number.isInteger(stickyMax) && stickyMax > 0) {
      const sid = id + '-sticky';
      const on = el('input', { type: 'checkbox', id: sid });
      const minutes = el('input', { type: 'number', id: sid + '-minutes', min: 1, max: stickyMax, step: 1, value: Math.min(60, stickyMax), 'aria-describedby': sid + '-error' });
      const same = el('input', { type: 'checkbox', id: sid + '-same', checked: true });
      const error = el('p', { class: 'error', id: sid + '-error', 'aria-live': 'polite' });
      error.hidden = true;
      const opts = el('div', { class: 'sticky-options' },
        el('label', { for: sid + '-minutes' }, 'For how many minutes (at most ' + stickyMax + ')'), minutes,
        el('div', {}, same, el('label', { class: 'inline', for: sid + '-same' }, 'Only with the same arguments')));
      opts.hidden = true;
      on.addEventListener('change', () => { opts.hidden = !on.checked; });
      form.append(el('fieldset', { class: 'sticky' }, el('legend', {}, 'Keep allowing'),
        on, el('label', { class: 'inline', for: sid }, 'Also allow such calls in this conversation without asking again'),
        opts, error));
      sticky = { on, minutes, same, error, max: stickyMax };
    }

    // Under a two-person rule, the first approval waits for a second
    // approver, who must send the same decisions: the form starts from them.
    if (item.approval) {
      const mine = item.approval.by === signedInAs();
      card.append(el('p', { class: 'badge awaiting second-approval' }, mine
        ? 'You approved this; awaiting second approval by another approver.'
        : 'Approved by ' + item.approval.by + '; awaiting second approval: allow the same calls to complete it, or deny.'));
      for (const d of item.approval.decisions || []) {
        const row = rows.find((x) => x.call.key === d.key);
        if (!row) continue;
        (d.verdict === 'deny' ? row.deny : row.allow).checked = true;
        if (d.message) row.msg.value = d.message;
        if (d.arguments !== undefined) {
          row.editor.value = JSON.stringify(d.arguments, null, 2);
          row.details.open = true;
        }
        row.sync();
      }
    }

    const formError = el('p', { class: 'error', role: 'alert' });
    formError.hidden = true;
    const submit = el('button', { type: 'submit' }, 'Submit the decision');
    form.append(formError, submit);
    card.append(form);
    // Hints about the form go once it changes: they were about what it
    // held before.
    const clearHints = () => {
      formError.hidden = true;
      if (sticky) sticky.error.hidden = true;
    };
    form.addEventListener('input', clearHints);
    form.addEventListener('change', clearHints);

    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      formError.hidden = true;
      const decisions = [];
      let firstBad = null;
      for (const row of rows) {
        row.callError.hidden = true;
        if (!row.allow.checked && !row.deny.checked) {
          row.callError.textContent = 'Choose Allow or Deny.';
          row.callError.hidden = false;
          firstBad = firstBad || row.allow;
          continue;
        }
        const d = { key: row.call.key, verdict: row.allow.checked ? 'allow' : 'deny' };
        if (row.deny.checked && row.msg.value.trim()) d.message = row.msg.value.trim();
        if (row.allow.checked) {
          const parsed = checkEditor(row);
          if (parsed === undefined) {
            row.details.open = true;
            firstBad = firstBad || row.editor;
            continue;
          }
          if (parsed !== null) d.arguments = parsed;
        }
        decisions.push(d);
      }
      const payload = { decisions };
      if (sticky) sticky.error.hidden = true;
      if (sticky && sticky.on.checked && decisions.some((d) => d.verdict === 'allow')) {
        const n = Number(sticky.minutes.value);
        if (!Number.isInteger(n) || n < 1 || n > sticky.max) {
          sticky.error.textContent = 'Give a whole number of minutes from 1 to ' + sticky.max + '.';
          sticky.error.hidden = false;
          firstBad = firstBad || sticky.minutes;
        }
        payload.sticky = { minutes: n, same_arguments: sticky.same.checked };
      }
      if (firstBad) {
        firstBad.focus();
        return;
      }
      submit.disabled = true;
      const r = await api('POST', apiConv(item.conversation_id) + '/pauses/' + encodeURIComponent(item.pause_id) + '/decisions', payload);
      submit.disabled = false;
      if (r.status === 202 && r.data.status === 'awaiting_second_approval') {
        card.replaceChildren(el('h2', {}, tools.join(', ') + ' for ' + item.requester),
          el('p', { class: 'ok', role: 'status' }, 'Approved: awaiting second approval. Another approver must allow the same calls before they run.'));
        announce('Approval recorded; awaiting second approval.');
        if (onDone) onDone(item);
        return;
      }
      if (r.status === 200) {
        const verdicts = decisions.map((d) => (d.verdict === 'allow' ? 'allowed' : 'denied')).join(', ');
        const grants = (r.data.grants || []).map((g) => g.tool).join(', ');
        card.replaceChildren(el('h2', {}, tools.join(', ') + ' for ' + item.requester),
          el('p', { class: 'ok', role: 'status' }, 'Decided: ' + verdicts + '. The agent has ' +
            (r.data.status === 'paused' ? 'paused again.' : 'answered.') +
            (grants ? ' Calls of ' + grants + ' in this conversation are allowed without asking until the grant ends.' : '')));
        announce('Decision sent: ' + verdicts + '.');
        if (onDone) onDone(item);
        return;
      }
      const d = r.data || {};
      const row = rows.find((x) => x.call.key === d.key);
      const argsProblem = d.problem === 'invalid_arguments' || (d.error === 'unknown_field' && /arguments/.test(d.message || ''));
      if (row && argsProblem) {
        showEditorError(row, peopleText(r));
        row.details.open = true;
        row.editor.focus();
        return;
      }
      if (row) {
        row.callError.textContent = peopleText(r);
        row.callError.hidden = false;
        return;
      }
      if (argsProblem) {
        const edited = rows.find((x) => x.allow.checked && x.editor.value !== x.original);
        if (edited) {
          showEditorError(edited, peopleText(r));
          edited.details.open = true;
          edited.editor.focus();
          return;
        }
      }
      formError.textContent = peopleText(r);
      formError.hidden = false;
    });
    return card;
  }

  function showEditorError(row, text) {
    row.editorError.textContent = text;
    row.editorError.hidden = text === '';
    row.editor.setAttribute('aria-invalid', text === '' ? 'false' : 'true');
  }

  // checkEditor validates a call's edited arguments and shows the problem
  // next to the editor. It returns the parsed object, null when the
  // arguments are unchanged, or undefined when they are invalid.
  function checkEditor(row) {
    const text = row.editor.value;
    let parsed;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      showEditorError(row, 'Not valid JSON: ' + err.message);
      return undefined;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      showEditorError(row, 'The arguments must be a JSON object, like {"name": "value"}.');
      return undefined;
    }
    showEditorError(row, '');
    if (JSON.stringify(parsed) === JSON.stringify(JSON.parse(row.original))) return null;
    return parsed;
  }

  function inboxPage(only) {
    const list = document.getElementById('inbox');
    const status = document.getElementById('inbox-status');
    const reveal = new URLSearchParams(location.search).get('reveal') === 'true';
    const shown = new Map(); // pause id -> {card, sig}
    const decided = new Set();

    function refreshStatus() {
      if (only) return;
      status.textContent = shown.size ? '' : 'Nothing waits for your decision.';
    }

    const load = serialized(async () => {
      const r = await api('GET', '/v1/inbox' + (reveal ? '?reveal=true' : ''));
      if (r.status !== 200) {
        status.textContent = errorText(r);
        return;
      }
      let items = r.data.pauses || [];
      if (only) {
        items = items.filter((x) => x.conversation_id === convID && x.pause_id === pauseID);
        if (!items.length && !shown.size && !decided.size) {
          status.textContent = 'This pause does not wait for your decision: it was decided or expired, or your roles may not decide it.';
          return;
        }
        status.textContent = '';
      }
      const bar = document.getElementById('reveal-bar');
      // The reveal control, only for a user who may reveal some item.
      if (bar && (reveal || items.some((x) => x.may_reveal === true))) {
        bar.replaceChildren(el('a', { href: reveal ? '/inbox' : '/inbox?reveal=true', id: 'reveal-link' }, reveal ? 'Hide the originals of privacy tokens' : 'Reveal the originals of privacy tokens'));
        bar.hidden = false;
      } else if (bar) {
        bar.hidden = true;
      }
      const ids = new Set(items.map((x) => x.pause_id));
      let added = 0;
      for (const [pid, entry] of shown) {
        if (!ids.has(pid) && !decided.has(pid)) {
          entry.card.remove();
          shown.delete(pid);
        }
      }
      for (const item of items) {
        if (decided.has(item.pause_id)) continue;
        // A card is made again when its first approval changed.
        const sig = JSON.stringify(item.approval || null);
        const old = shown.get(item.pause_id);
        if (old && old.sig === sig) continue;
        const card = pauseCard(item, (it) => { decided.add(it.pause_id); });
        shown.set(item.pause_id, { card, sig });
        if (old) {
          old.card.replaceWith(card);
        } else {
          list.append(card);
          added++;
        }
      }
      if (added && !only) announce(added === 1 ? 'A new call waits for your decision.' : added + ' new calls wait for your decision.');
      refreshStatus();
    });

    // Live: the inbox's events, each a reason to read the inbox again;
    // a slow poll only while they fail (for instance for a user who
    // decides nothing, whom the server refuses them).
    follow('/v1/inbox/events', load, 30000);
    load();
  }

  // ---- audit --------------------------------------------------------------

  async function auditPage() {
    const r = await api('GET', apiConv(convID));
    const table = document.getElementById('decisions');
    if (r.status === 200) {
      const decs = r.data.decisions || [];
      setText('decisions-status', decs.length ? '' : 'No pause of this conversation was decided yet.');
      table.hidden = !decs.length;
      const tbody = table.querySelector('tbody');
      for (const d of decs) {
        const what = (d.decisions || []).map((x) => x.key + ': ' + x.verdict + (x.message ? ' (' + x.message + ')' : '')).join('; ');
        let who = d.decided_by || '—';
        if (d.approvers && d.approvers.length) who = d.approvers.join(' and ');
        if (d.source === 'sticky') who = 'sticky grant by ' + (d.grants || []).map((g) => g.granted_by).join(', ');
        if (d.source === 'expiry') who = 'expired';
        tbody.append(el('tr', {}, el('td', {}, el('code', {}, d.pause_id)), el('td', {}, who),
          el('td', {}, timeEl(d.decided_at, new Date(d.decided_at).toLocaleString())), el('td', {}, what), el('td', {}, d.outcome)));
      }
    } else {
      setText('decisions-status', errorText(r));
    }

    const a = await api('GET', apiConv(convID) + '/audit');
    const list = document.getElementById('audit');
    if (a.status !== 200) {
      setText('audit-status', a.status === 404 ? 'No audit log is configured for this service.' : errorText(a));
      return;
    }
    const records = a.data.records || [];
    const v = a.data.verification || {};
    const banner = document.getElementById('verification');
    if (a.data.verified) {
      banner.className = 'card verification ok';
      banner.textContent = 'Chain verified: the audit log\'s ' + v.records + ' records are intact' + (v.head ? ' (head ' + v.head.split(':')[0] + ')' : '') + ', these records among them.';
    } else {
      banner.className = 'card verification error';
      banner.textContent = 'Chain broken' + (v.seq ? ' at record ' + v.seq : '') + (v.problem ? ': ' + v.problem.replace(/_/g, ' ') : '') +
        (v.detail ? ' (' + v.detail + ')' : '') + '. Records after the break cannot be trusted.';
    }
    banner.hidden = false;
    setText('audit-status', records.length ? '' : 'The audit log holds no records of this conversation.');
    let pause = null;
    for (const rec of records) {
      if (rec.pause_id && rec.pause_id !== pause) {
        pause = rec.pause_id;
        list.append(el('li', { class: 'pause-mark' }, el('h3', {}, 'Pause ', el('code', {}, pause))));
      }
      const who = rec.actor && rec.actor.id ? rec.actor.id + (rec.actor.source && rec.actor.source !== 'person' ? ' (' + rec.actor.source.replace(/_/g, ' ') + ')' : '')
        : (rec.actor && rec.actor.source === 'system' ? 'the service' : '');
      const item = el('li', { class: 'event kind-' + rec.kind, 'data-seq': rec.seq },
        el('span', { class: 'when' }, timeEl(rec.time, new Date(rec.time).toLocaleString())), ' ',
        el('span', { class: 'badge kind' }, kindText[rec.kind] || rec.kind), ' ',
        rec.tool ? el('code', {}, rec.tool) : null, rec.call_key ? el('span', { class: 'meta' }, ' (' + rec.call_key + ')') : null,
        who ? el('span', {}, ' by ', el('strong', {}, who)) : null,
        rec.reason ? el('span', { class: 'reason' }, ': ', highlighted(rec.reason)) : null,
        el('details', { class: 'raw' }, el('summary', {}, 'Record ' + rec.seq),
          el('pre', {}, JSON.stringify(rec, null, 2))));
      list.append(item);
    }
  }

  // kindText names the audit log's kinds of events for people.
  const kindText = {
    requested: 'awaited a decision', decided: 'decided', edited: 'arguments edited', executed: 'ran',
    denied: 'denied', expired: 'expired', refused: 'refused', revealed: 'originals shown', revoked: 'grant revoked',
  };

  // ---- history ------------------------------------------------------------

  // verdictsText sums up a record's decisions for people.
  function verdictsText(d) {
    if (d.outcome === 'expired') return 'nobody decided in time';
    return (d.decisions || []).map((x) => x.key + ': ' + (x.verdict === 'allow' ? 'allowed' : 'denied') + (x.message ? ' (' + x.message + ')' : '')).join('; ');
  }

  function deciderText(d) {
    if (d.source === 'sticky') return 'sticky grant by ' + (d.grants || []).map((g) => g.granted_by).join(', ');
    if (d.source === 'expiry') return 'nobody';
    if (d.approvers && d.approvers.length) return d.approvers.join(' and ');
    return d.decided_by || '—';
  }

  function historyPage() {
    const form = document.getElementById('history-filters');
    const list = document.getElementById('history');
    const status = document.getElementById('history-status');
    const more = document.getElementById('history-more');
    // The filters live in the page's address, so that a filtered view can
    // be shared and survives a reload.
    const params = new URLSearchParams(location.search);
    for (const name of ['agent', 'tool', 'requester', 'decider', 'outcome']) {
      if (params.get(name)) form.elements[name].value = params.get(name);
    }
    let next = '';
    const load = async (append) => {
      const q = new URLSearchParams();
      for (const name of ['agent', 'tool', 'requester', 'decider', 'outcome']) {
        const v = form.elements[name].value.trim();
        if (v) q.set(name, v);
      }
      if (append && next) q.set('after', next);
      const r = await api('GET', '/v1/history?' + q.toString());
      if (r.status !== 200) {
        status.textContent = errorText(r);
        return;
      }
      if (!append) list.replaceChildren();
      for (const d of r.data.items || []) {
        list.append(el('li', { class: 'card history-item outcome-' + d.outcome },
          el('h2', {}, (d.tools && d.tools.length ? d.tools.join(', ') : 'A reply') + ' for ' + d.requester, ' ', el('span', { class: 'badge' }, d.outcome)),
          el('p', { class: 'meta' }, 'Agent ', el('code', {}, d.agent), ' · ', timeEl(d.decided_at, new Date(d.decided_at).toLocaleString()), ' (', ageEl(d.decided_at), ')',
            ' · by ', el('strong', {}, deciderText(d)), ' · ',
            el('a', { href: convPath(d.conversation_id) + '/audit' }, 'audit trail of ', el('code', {}, d.conversation_id))),
          el('p', {}, highlighted(verdictsText(d)))));
      }
      next = r.data.next || '';
      more.hidden = !next;
      status.textContent = list.children.length ? '' : 'No resolved pause matches.';
    };
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const q = new URLSearchParams();
      for (const name of ['agent', 'tool', 'requester', 'decider', 'outcome']) {
        const v = form.elements[name].value.trim();
        if (v) q.set(name, v);
      }
      history.replaceState(null, '', '/history' + (q.toString() ? '?' + q.toString() : ''));
      load(false);
    });
    more.addEventListener('click', () => { load(true); });
    load(false);
  }

  // ---- dispatch -----------------------------------------------------------

  switch (page) {
    case 'conversations': conversationsPage(); break;
    case 'chat': chatPage(); break;
    case 'inbox': inboxPage(false); break;
    case 'decide': inboxPage(true); break;
    case 'audit': auditPage(); break;
    case 'history': historyPage(); break;
    default: break;
  }
})();
