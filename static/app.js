// hookbin inspector: live updates, copy buttons, keyboard moves. Every page works without it.
//
// Captured data only ever reaches the DOM through textContent and attribute properties, never
// through innerHTML; detail panes fetched from the server are our own escaped HTML.
'use strict';
(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const WIDE = window.matchMedia('(min-width: 900px)');
  // The copy-as-curl target is remembered per bin, as {"bin": id, "target": url} under this
  // prefix + the bin id. The unscoped key of earlier versions is never read (a script on this
  // origin could have planted it to aim everyone's commands at its own server); it is removed.
  const TARGET_PREFIX = 'hookbin.curlTarget:';
  const LEGACY_TARGET_KEY = 'hookbin.curlTarget';

  document.documentElement.classList.add('js');

  // A key press meant for a field (or with a modifier) is not a shortcut.
  function typing(ev) {
    if (ev.defaultPrevented || ev.metaKey || ev.ctrlKey || ev.altKey) return true;
    const el = document.activeElement;
    if (!el) return false;
    if (el.isContentEditable || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT') return true;
    return el.tagName === 'INPUT' && !/^(radio|checkbox|button|submit|reset)$/.test(el.type);
  }

  function announce(text) {
    const el = $('#announce');
    if (!el) return;
    el.textContent = '';
    setTimeout(() => { el.textContent = text; }, 30);
  }

  function store(key, value) {
    try {
      if (value) localStorage.setItem(key, value); else localStorage.removeItem(key);
    } catch (_) { /* storage disabled */ }
  }
  function recall(key) {
    try { return localStorage.getItem(key) || ''; } catch (_) { return ''; }
  }

  // ---- Copy buttons ----------------------------------------------------------------------
  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      try { await navigator.clipboard.writeText(text); return true; } catch (_) { /* fall back */ }
    }
    const ta = document.createElement('textarea');
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.className = 'offscreen';
    document.body.appendChild(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch (_) { ok = false; }
    ta.remove();
    return ok;
  }
  const textOf = (el) => (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' ? el.value : el.textContent);

  document.addEventListener('click', async (ev) => {
    const btn = ev.target.closest('button[data-copy]');
    if (!btn) return;
    const src = $(btn.dataset.copy);
    if (!src) return;
    const ok = await copyText(textOf(src));
    btn.dataset.label = btn.dataset.label || btn.textContent;
    btn.textContent = ok ? 'Copied' : 'Copy failed';
    announce(ok ? 'Copied to the clipboard' : 'Could not copy: select the text and copy it by hand');
    clearTimeout(btn.copyTimer);
    btn.copyTimer = setTimeout(() => { btn.textContent = btn.dataset.label; }, 1500);
  });

  // Copy buttons whose text is fetched (the exact body, which the page shows only the start of).
  document.addEventListener('click', async (ev) => {
    const btn = ev.target.closest('button[data-copy-fetch]');
    if (!btn) return;
    let ok = false;
    try {
      const res = await fetch(btn.dataset.copyFetch, { credentials: 'same-origin' });
      if (res.ok) ok = await copyText(await res.text());
    } catch (_) { ok = false; }
    btn.dataset.label = btn.dataset.label || btn.textContent;
    btn.textContent = ok ? 'Copied' : 'Copy failed';
    announce(ok ? 'Copied to the clipboard' : 'Could not copy: download it instead');
    clearTimeout(btn.copyTimer);
    btn.copyTimer = setTimeout(() => { btn.textContent = btn.dataset.label; }, 1500);
  });

  // Destructive forms ask first (without JavaScript they simply submit). A deleted bin is
  // forgotten from the recent list.
  document.addEventListener('submit', (ev) => {
    const question = ev.target.dataset && ev.target.dataset.confirm;
    if (question && !window.confirm(question)) {
      ev.preventDefault();
      return;
    }
    if (ev.target.dataset && ev.target.dataset.forget) forgetBin(ev.target.dataset.forget);
  });

  // ---- Recent bins (this browser only) -----------------------------------------------------
  // Kept as [{"id", "seen"}] under one key. What is read back is checked: only ids of the shape
  // the server issues and numeric times survive, at most RECENT_MAX, and everything reaches the
  // page through textContent and a URL built from the checked id.
  const RECENT_KEY = 'hookbin.recentBins';
  const RECENT_MAX = 10;
  const BIN_ID = /^[0-9a-z]{16,64}$/;
  function recentBins() {
    let list;
    try { list = JSON.parse(recall(RECENT_KEY) || '[]'); } catch (_) { list = []; }
    if (!Array.isArray(list)) list = [];
    const seen = new Set();
    return list.filter((e) => e && typeof e.id === 'string' && BIN_ID.test(e.id)
      && typeof e.seen === 'number' && Number.isFinite(e.seen) && !seen.has(e.id) && seen.add(e.id))
      .slice(0, RECENT_MAX);
  }
  function rememberBin(id) {
    if (!BIN_ID.test(id)) return;
    const list = recentBins().filter((e) => e.id !== id);
    list.unshift({ id, seen: Date.now() });
    store(RECENT_KEY, JSON.stringify(list.slice(0, RECENT_MAX)));
  }
  function forgetBin(id) {
    const list = recentBins().filter((e) => e.id !== id);
    store(RECENT_KEY, list.length ? JSON.stringify(list) : '');
  }
  function showRecentBins() {
    const box = $('#recent');
    const ul = $('#recent-bins');
    if (!box || !ul) return;
    const list = recentBins();
    store(RECENT_KEY, list.length ? JSON.stringify(list) : '');
    ul.textContent = '';
    for (const e of list) {
      const li = document.createElement('li');
      li.dataset.bin = e.id;
      const a = document.createElement('a');
      a.href = `/bins/${e.id}`;
      a.className = 'mono';
      a.textContent = e.id;
      const when = document.createElement('span');
      when.className = 'hint';
      when.textContent = ` opened ${relative(e.seen)}`;
      li.append(a, when);
      ul.appendChild(li);
      // A bin that expired or was deleted elsewhere leaves the list.
      fetch(`/api/bins/${e.id}`, { credentials: 'same-origin' }).then((res) => {
        if (res.status === 404) {
          forgetBin(e.id);
          li.remove();
          if (!ul.children.length) box.hidden = true;
        }
      }).catch(() => {});
    }
    box.hidden = list.length === 0;
  }

  // ---- Times -------------------------------------------------------------------------------
  function relative(ms) {
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (s < 5) return 'just now';
    if (s < 60) return `${s} s ago`;
    const m = Math.round(s / 60);
    if (m < 60) return `${m} min ago`;
    const h = Math.round(m / 60);
    if (h < 48) return `${h} h ago`;
    return `${Math.round(h / 24)} days ago`;
  }
  function localTime(d) {
    return d.toLocaleString(undefined, {
      year: 'numeric', month: 'short', day: 'numeric',
      hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short',
    });
  }
  function refreshTimes(root = document) {
    for (const t of $$('time.when', root)) {
      const d = new Date(t.dateTime);
      if (Number.isNaN(d.getTime())) continue;
      t.textContent = relative(d.getTime());
      t.title = localTime(d);
    }
    for (const t of $$('time.abs', root)) {
      const d = new Date(t.dateTime);
      if (Number.isNaN(d.getTime())) continue;
      t.textContent = `${localTime(d)} · ${relative(d.getTime())}`;
    }
  }

  // ---- Copy as curl ------------------------------------------------------------------------
  // The checks of the server's `target` parameter (src/render/curl.rs, validate_target): an
  // absolute http(s) URL of printable ASCII, no query, fragment or credentials, a registered
  // name, IPv4 or bracketed IPv6 host, and a port 1..65535.
  function validTarget(t) {
    if (typeof t !== 'string') return false;
    const m = /^https?:\/\/([^/]*)/i.exec(t);
    if (!m || !/^[\x21-\x7e]+$/.test(t) || /[?#]/.test(t)) return false;
    const authority = m[1];
    if (authority.includes('@')) return false;
    let host;
    let port;
    if (authority.startsWith('[')) {
      const end = authority.indexOf(']');
      if (end < 0) return false;
      host = authority.slice(1, end);
      const after = authority.slice(end + 1);
      if (after && !after.startsWith(':')) return false;
      port = after ? after.slice(1) : null;
      if (!/^[0-9a-fA-F:.]+$/.test(host)) return false;
    } else {
      const colon = authority.indexOf(':');
      host = colon < 0 ? authority : authority.slice(0, colon);
      port = colon < 0 ? null : authority.slice(colon + 1);
      if (!/^[A-Za-z0-9\-._~%!$&'()*+,;=]+$/.test(host)) return false;
    }
    if (port === null) return true;
    return /^[0-9]{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535;
  }
  // The target this page remembered for `bin`, or '' for anything it did not write itself for
  // this very bin (another bin's entry, a bare string, an invalid URL): those are dropped.
  function rememberedTarget(bin) {
    const raw = recall(TARGET_PREFIX + bin);
    if (!raw) return '';
    let entry = null;
    try { entry = JSON.parse(raw); } catch (_) { entry = null; }
    if (entry && entry.bin === bin && validTarget(entry.target)) return entry.target;
    store(TARGET_PREFIX + bin, '');
    return '';
  }
  function rememberTarget(bin, target) {
    store(TARGET_PREFIX + bin, validTarget(target) ? JSON.stringify({ bin, target }) : '');
  }
  store(LEGACY_TARGET_KEY, '');

  async function updateCurl(pre, target) {
    const url = pre.dataset.api + (target ? `?target=${encodeURIComponent(target)}` : '');
    try {
      const res = await fetch(url, { credentials: 'same-origin' });
      if (res.ok) pre.querySelector('code').textContent = (await res.text()).trim();
    } catch (_) { /* keep the server's rendering */ }
  }
  // A command too long for the page (a large body is in it): fetched when copied, and its
  // download link follows the target field.
  function curlUrl(api, target, download) {
    const params = [];
    if (download) params.push('download=1');
    if (target) params.push(`target=${encodeURIComponent(target)}`);
    return api + (params.length ? `?${params.join('&')}` : '');
  }
  async function copyLargeCurl(box) {
    const input = $('#curl-target');
    const target = input ? input.value.trim() : '';
    try {
      const res = await fetch(curlUrl(box.dataset.api, validTarget(target) ? target : ''), { credentials: 'same-origin' });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const ok = await copyText((await res.text()).trim());
      announce(ok ? 'Copied the request as curl' : 'Could not copy: download the script instead');
      return ok;
    } catch (_) {
      announce('Could not fetch the command: download the script instead');
      return false;
    }
  }
  document.addEventListener('click', async (ev) => {
    const btn = ev.target.closest('#copy-curl-large');
    if (!btn) return;
    const box = btn.closest('#curl-large');
    const ok = await copyLargeCurl(box);
    btn.dataset.label = btn.dataset.label || btn.textContent;
    btn.textContent = ok ? 'Copied' : 'Copy failed';
    clearTimeout(btn.copyTimer);
    btn.copyTimer = setTimeout(() => { btn.textContent = btn.dataset.label; }, 1500);
  });
  function initLargeCurl(root) {
    const box = $('#curl-large', root);
    const input = $('#curl-target', root);
    if (!box || !input) return;
    const bin = box.dataset.api.split('/')[3] || '';
    const link = $('#curl-download', box);
    const aim = (target) => { link.href = curlUrl(box.dataset.api, target, true); };
    const remembered = rememberedTarget(bin);
    if (!input.value && remembered) {
      input.value = remembered;
      aim(remembered);
    }
    input.form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const target = input.value.trim();
      rememberTarget(bin, target);
      aim(validTarget(target) ? target : '');
    });
  }

  function initCurl(root) {
    initLargeCurl(root);
    const pre = $('#curl-command', root);
    const input = $('#curl-target', root);
    if (!pre || !input) return;
    // /api/bins/{bin}/requests/{id}/curl
    const bin = pre.dataset.api.split('/')[3] || '';
    const remembered = rememberedTarget(bin);
    if (!input.value && remembered) {
      input.value = remembered;
      updateCurl(pre, remembered);
    }
    input.form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const target = input.value.trim();
      rememberTarget(bin, target);
      updateCurl(pre, target);
    });
  }
  function copyCurl() {
    const pre = $('#curl-command');
    const large = $('#curl-large');
    if (!pre && large) {
      copyLargeCurl(large);
      return;
    }
    if (!pre) {
      announce('No curl command for this request');
      return;
    }
    copyText(pre.textContent.trim()).then((ok) => announce(ok ? 'Copied the request as curl' : 'Could not copy'));
  }

  // ---- Verify in place ----------------------------------------------------------------------
  // The form posts to the page route as without JavaScript; the verdict of the answer replaces
  // this page's, next to the form, with no reload and no jump to the top.
  function initVerify(root) {
    const form = $('#verify-form', root);
    if (!form) return;
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const button = form.querySelector('button[type=submit]');
      button.disabled = true;
      try {
        const res = await fetch(form.action, {
          method: 'POST',
          credentials: 'same-origin',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'text/html' },
          body: new URLSearchParams(new FormData(form)).toString(),
        });
        const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
        const fresh = doc.getElementById('verify-result');
        if (!fresh) throw new Error(`HTTP ${res.status}`);
        const old = $('#verify-result', root);
        old.replaceWith(document.adoptNode(fresh));
        const shown = $('#verify-result', root);
        shown.focus({ preventScroll: true });
        shown.scrollIntoView({ block: 'nearest' });
        const verdict = $('.verdict strong', shown) || $('.error', shown);
        announce(verdict ? verdict.textContent : 'Checked');
      } catch (_) {
        form.submit();
      } finally {
        button.disabled = false;
      }
    });
  }

  // A Copy button beside each header value (the whole value, also when it is folded).
  function addHeaderCopies(root) {
    for (const td of $$('#headers-table td.value', root)) {
      if (td.querySelector('button.copy-value')) continue;
      const details = td.querySelector('details');
      const value = details
        ? Array.from(details.childNodes).filter((n) => n.nodeName !== 'SUMMARY').map((n) => n.textContent).join('')
        : Array.from(td.childNodes).filter((n) => !(n.classList && n.classList.contains('tag'))).map((n) => n.textContent).join('').trim();
      const btn = document.createElement('button');
      btn.type = 'button';
      // Its label is drawn by CSS, so the table's text (what a user selects, what tests read)
      // stays the headers alone.
      btn.className = 'copy-value tiny';
      btn.setAttribute('aria-label', 'Copy this value');
      btn.addEventListener('click', async () => {
        const ok = await copyText(value);
        btn.classList.add(ok ? 'copied' : 'failed');
        announce(ok ? 'Copied the header value' : 'Could not copy');
        setTimeout(() => { btn.classList.remove('copied', 'failed'); }, 1500);
      });
      td.appendChild(btn);
    }
  }

  function initDetail(root) {
    for (const b of $$('button.copy[hidden]', root)) b.hidden = false;
    addHeaderCopies(root);
    refreshTimes(root);
    initCurl(root);
    initVerify(root);
  }

  initDetail(document);
  setInterval(() => refreshTimes(), 10000);
  showRecentBins();

  // ---- The keyboard shortcuts overlay (`?`) ------------------------------------------------
  const SHORTCUTS = [
    ['j / ↓', 'next request'], ['k / ↑', 'previous request'], ['c', 'copy the request as curl'],
    ['/', 'search'], ['f', 'follow newest on or off'], ['?', 'this list'], ['Esc', 'close'],
  ];
  function toggleShortcuts() {
    let box = $('#shortcuts');
    if (box) {
      box.remove();
      return;
    }
    box = document.createElement('div');
    box.id = 'shortcuts';
    box.className = 'shortcuts';
    box.setAttribute('role', 'dialog');
    box.setAttribute('aria-label', 'Keyboard shortcuts');
    box.tabIndex = -1;
    const h = document.createElement('h2');
    h.textContent = 'Keyboard shortcuts';
    const dl = document.createElement('dl');
    for (const [key, what] of SHORTCUTS) {
      const dt = document.createElement('dt');
      const kbd = document.createElement('kbd');
      kbd.textContent = key;
      dt.appendChild(kbd);
      const dd = document.createElement('dd');
      dd.textContent = what;
      dl.append(dt, dd);
    }
    const close = document.createElement('button');
    close.type = 'button';
    close.className = 'small';
    close.textContent = 'Close';
    close.addEventListener('click', () => box.remove());
    box.append(h, dl, close);
    document.body.appendChild(box);
    box.focus();
  }
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && $('#shortcuts')) { $('#shortcuts').remove(); return; }
    if (ev.key !== '?' || typing(ev)) return;
    ev.preventDefault();
    toggleShortcuts();
  });

  // The bin header bar: "Response" opens the editor where it is.
  const openResponse = $('#open-response');
  if (openResponse) {
    openResponse.addEventListener('click', (ev) => {
      const details = $('#response');
      if (!details) return;
      ev.preventDefault();
      details.open = true;
      details.scrollIntoView({ block: 'start' });
      const first = $('#resp-status');
      if (first) first.focus({ preventScroll: true });
    });
  }

  // ---- The request list: selection, live rows, keyboard -----------------------------------
  const list = $('#requests');
  if (!list) {
    document.addEventListener('keydown', (ev) => {
      if (ev.key === 'c' && !typing(ev)) copyCurl();
    });
    return;
  }
  const bin = list.dataset.bin;
  // The search of this page (`?q=`): the server filters the list and the stream with it.
  const query = list.dataset.q || '';
  const pane = list.closest('.list-pane');
  const tpl = $('#row-template');
  let selectSeq = 0;
  rememberBin(bin);

  // `?req=N` on a long list: the selected row is brought into view (in the list pane only).
  const current = list.querySelector('a[aria-current]');
  if (current && WIDE.matches) current.scrollIntoView({ block: 'center' });

  // "Follow newest": each arrival is selected as it comes. Remembered per browser.
  const FOLLOW_KEY = 'hookbin.followNewest';
  const follow = $('#follow-newest');
  if (follow) {
    follow.closest('label').hidden = false;
    follow.checked = recall(FOLLOW_KEY) === '1';
    follow.addEventListener('change', () => {
      store(FOLLOW_KEY, follow.checked ? '1' : '');
      announce(follow.checked ? 'Following the newest request' : 'Not following');
    });
  }

  function markSelected(li) {
    for (const a of $$('a[aria-current]', list)) a.removeAttribute('aria-current');
    li.querySelector('a').setAttribute('aria-current', 'true');
  }

  // Shows the row's request beside the list without a reload (wide screens); on a phone the
  // link opens the request on its own page as it would without JavaScript.
  async function select(li) {
    const link = li.querySelector('a');
    if (!WIDE.matches) { window.location.href = link.href; return; }
    markSelected(li);
    link.scrollIntoView({ block: 'nearest' });
    const seq = ++selectSeq;
    try {
      const res = await fetch(link.href, { credentials: 'same-origin', headers: { Accept: 'text/html' } });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      const fresh = doc.getElementById('detail');
      if (!fresh) throw new Error('no detail in the page');
      if (seq !== selectSeq) return; // a later selection won
      $('#detail').replaceWith(document.adoptNode(fresh));
      history.replaceState(null, '', link.href);
      initDetail($('#detail'));
    } catch (_) {
      window.location.href = link.href;
    }
  }

  list.addEventListener('click', (ev) => {
    const link = ev.target.closest('a.row-link');
    if (!link || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    if (!WIDE.matches) return;
    ev.preventDefault();
    select(link.closest('li'));
  });

  document.addEventListener('keydown', (ev) => {
    if (typing(ev)) return;
    const inList = list.contains(document.activeElement);
    let step = 0;
    if (ev.key === 'j' || (inList && ev.key === 'ArrowDown')) step = 1;
    else if (ev.key === 'k' || (inList && ev.key === 'ArrowUp')) step = -1;
    else if (ev.key === 'c') { copyCurl(); return; }
    else if (ev.key === '/' && $('#q')) { ev.preventDefault(); $('#q').focus(); return; }
    else if (ev.key === 'f' && follow) { follow.click(); return; }
    if (!step) return;
    const rows = $$('li.row', list);
    if (!rows.length) return;
    ev.preventDefault();
    const current = rows.findIndex((li) => li.querySelector('a[aria-current]'));
    const next = rows[current < 0 ? 0 : Math.max(0, Math.min(rows.length - 1, current + step))];
    if (next.querySelector('a[aria-current]')) return;
    next.querySelector('a').focus({ preventScroll: true });
    select(next);
  });

  // ---- Live updates (server-sent events) ---------------------------------------------------
  const HEAD = $('.list-head h2');
  const liveBadge = document.createElement('span');
  liveBadge.className = 'live off';
  // No stream (a search that does not parse): nothing is live until it is fixed.
  liveBadge.textContent = list.dataset.stream ? 'connecting' : 'paused';
  HEAD.appendChild(liveBadge);
  let pointerInList = false;
  // Rows that arrived while the pointer rested on the list: inserting them would move the row
  // under it, so they wait behind a "new requests" button until the pointer leaves.
  const held = [];
  pane.addEventListener('pointerenter', () => { pointerInList = true; });
  pane.addEventListener('pointerleave', () => {
    pointerInList = false;
    releaseHeld();
  });

  const METHOD_CLASS = {
    GET: 'm-get', POST: 'm-post', PUT: 'm-put', PATCH: 'm-patch', DELETE: 'm-delete',
    HEAD: 'm-meta', OPTIONS: 'm-meta',
  };
  function humanSize(n) {
    if (n < 1024) return `${n} B`;
    const units = ['KiB', 'MiB', 'GiB', 'TiB'];
    let v = n / 1024;
    let u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u += 1; }
    return `${v < 10 ? v.toFixed(1) : v.toFixed(0)} ${units[u]}`;
  }

  function buildRow(s) {
    const li = tpl.content.firstElementChild.cloneNode(true);
    li.dataset.id = s.id;
    li.classList.add('new');
    const link = li.querySelector('a');
    link.href = `/bins/${encodeURIComponent(bin)}?req=${encodeURIComponent(s.id)}${query ? `&q=${encodeURIComponent(query)}` : ''}`;
    const method = li.querySelector('.method');
    method.textContent = s.method;
    method.className = `method ${METHOD_CLASS[s.method] || 'm-other'}`;
    const target = (s.subpath || '/') + (s.query ? `?${s.query}` : '');
    const t = li.querySelector('.target');
    t.textContent = target;
    t.title = target;
    li.querySelector('time').dateTime = s.received_at;
    const size = li.querySelector('.size');
    size.textContent = humanSize(s.body_size);
    size.title = `${Number(s.body_size).toLocaleString('en-US')} bytes`;
    li.querySelector('.cut').hidden = !s.body_truncated;
    li.querySelector('.ctype').textContent = s.content_type || '';
    refreshTimes(li);
    return li;
  }

  // The scrolling box of the list: the pane on a wide screen, the window on a phone.
  function scroller() {
    return pane.scrollHeight > pane.clientHeight ? pane : document.scrollingElement;
  }

  let jump = null;
  function offerJump(text) {
    if (!jump) {
      // In a zero-height sticky box, so showing it moves no row.
      const wrap = document.createElement('div');
      wrap.className = 'jump-wrap';
      jump = document.createElement('button');
      jump.type = 'button';
      jump.id = 'jump-new';
      jump.className = 'jump-new';
      jump.addEventListener('click', () => {
        releaseHeld();
        scroller().scrollTo({ top: 0, behavior: 'smooth' });
        jump.hidden = true;
      });
      wrap.appendChild(jump);
      list.before(wrap);
    }
    jump.hidden = false;
    jump.textContent = text;
  }

  function releaseHeld() {
    while (held.length) insertRow(held.shift());
    if (jump && scroller().scrollTop === 0) jump.hidden = true;
  }

  // Inserts at the top. When the user has scrolled down the list, the rows they see stay
  // exactly where they are (the scroll position follows them).
  function insertRow(li) {
    const first = list.firstElementChild;
    const box = scroller();
    const before = first ? first.getBoundingClientRect().top : 0;
    list.prepend(li);
    if (first && box.scrollTop > 0) {
      const moved = first.getBoundingClientRect().top - before;
      if (moved) {
        box.scrollTop += moved;
        offerJump('↑ New requests');
      }
    }
  }

  // A new arrival: shown at once, or held while the pointer is on the list.
  function arrive(li) {
    if (list.firstElementChild && pointerInList) {
      held.push(li);
      offerJump(`↑ ${held.length} new request${held.length === 1 ? '' : 's'}`);
    } else {
      insertRow(li);
    }
  }

  function bumpCount() {
    const c = $('#count');
    if (!c) return;
    const n = Math.min(Number(c.dataset.cap), Number(c.dataset.count) + 1);
    c.dataset.count = String(n);
    c.textContent = String(n);
  }

  function showFirstArrival() {
    const waiting = $('#waiting');
    if (waiting) waiting.remove();
    for (const b of $$('.list-head button[disabled]')) b.disabled = false;
    const empty = $('#detail .empty-state h2');
    if (empty) {
      empty.textContent = 'Pick a request';
      const p = empty.nextElementSibling;
      if (p) p.textContent = 'Select a request in the list to see it here.';
    }
  }

  const live = list.dataset.live === 'true';
  const seen = new Set($$('li.row', list).map((li) => li.dataset.id));
  let newer = 0;
  let hiddenByFilter = 0;
  if (window.EventSource && list.dataset.stream) {
    const events = new EventSource(list.dataset.stream);
    events.addEventListener('open', () => {
      liveBadge.textContent = 'live';
      liveBadge.classList.remove('off');
    });
    events.addEventListener('error', () => {
      liveBadge.textContent = events.readyState === EventSource.CLOSED ? 'offline: reload' : 'reconnecting';
      liveBadge.classList.add('off');
    });
    events.addEventListener('request', (ev) => {
      let s;
      try { s = JSON.parse(ev.data); } catch (_) { return; }
      if (!live) {
        newer += 1;
        const box = $('#newer');
        box.hidden = false;
        box.querySelector('a').textContent = `${newer} new request${newer === 1 ? '' : 's'}: show the newest`;
        return;
      }
      if (seen.has(String(s.id))) return;
      seen.add(String(s.id));
      const li = buildRow(s);
      const noMatch = $('#no-match');
      if (noMatch) noMatch.remove();
      arrive(li);
      bumpCount();
      showFirstArrival();
      announce(`New ${s.method} request`);
      if (WIDE.matches && (!$('#detail .detail') || (follow && follow.checked))) select(li);
    });
    // An arrival the search does not match: counted, not listed.
    events.addEventListener('filtered', (ev) => {
      if (!live) return;
      if (seen.has(String(ev.lastEventId))) return;
      seen.add(String(ev.lastEventId));
      bumpCount();
      hiddenByFilter += 1;
      const note = $('#hidden-count');
      if (note) {
        note.hidden = false;
        note.textContent = ` ${hiddenByFilter} new request${hiddenByFilter === 1 ? '' : 's'} did not match.`;
      }
    });
    events.addEventListener('bin_deleted', () => {
      events.close();
      liveBadge.textContent = 'bin deleted';
      liveBadge.classList.add('off');
      announce('This bin was deleted');
    });
  }
})();
