// The interaction probe's in-page half (issue 12), installed as an init script: it runs in every frame
// before any script of the app. It records listener registrations, errors, animation frames, dialogs and
// DOM mutations, and exposes plan() and run() that the Python half (tasks/env/probe.py) calls after load.
// Everything lives in one non-enumerable global so the app does not trip over it.
(() => {
  if (window.__rrProbe) return;
  const origAdd = EventTarget.prototype.addEventListener;
  // Under the environment's controlled clock (tasks/env/pagetime.py) the page's timers, frames and
  // performance.now are that clock's: the probe's own waits take the real ones (the clock's saved originals),
  // and the frame after an action is a frame of the controlled clock, so the app's own loop draws it.
  const pw = globalThis.__pwClock;
  const real = pw ? pw.builtins : {setTimeout: window.setTimeout.bind(window), clearTimeout: window.clearTimeout.bind(window),
                                   requestAnimationFrame: window.requestAnimationFrame && window.requestAnimationFrame.bind(window),
                                   performance: window.performance};
  const appRaf = window.requestAnimationFrame;
  const origRaf = real.requestAnimationFrame || null;
  const origDebug = console.debug.bind(console);
  const origSetTimeout = real.setTimeout, origClearTimeout = real.clearTimeout;
  const realNow = real.performance.now.bind(real.performance);
  const FRAME_MS = 16;
  const R = {listeners: [], targets: [], errors: [], dialogs: [], submits: [], rafs: 0, draws: 0, mutations: 0,
             action: -1, inDispatch: false, hb: 0};
  Object.defineProperty(window, '__rrProbe', {value: R, enumerable: false});
  const MARK = '\u0000rr:';
  const mark = (o) => { try { origDebug(MARK + JSON.stringify(o)); } catch (e) {} };

  const targetId = (t) => {
    let i = R.targets.indexOf(t);
    if (i < 0) { i = R.targets.length; R.targets.push(t); }
    return i;
  };
  const fnSource = (fn) => {
    try { return typeof fn === 'function' ? Function.prototype.toString.call(fn).slice(0, 400) : ''; }
    catch (e) { return ''; }
  };
  const record = (target, type, fn, via) => {
    if (R.listeners.length >= 5000) return;
    R.listeners.push({type: String(type).toLowerCase(), target: targetId(target), via, src: fnSource(fn),
                      stack: (new Error().stack || '').slice(0, 800)});
  };

  // addEventListener (every EventTarget), on* properties (elements, document, window).
  EventTarget.prototype.addEventListener = function (type, fn, opts) {
    try { if (fn) record(this, type, fn, 'addEventListener'); } catch (e) {}
    return origAdd.call(this, type, fn, opts);
  };
  const wrapOn = (obj) => {
    for (const name of Object.getOwnPropertyNames(obj)) {
      if (!name.startsWith('on')) continue;
      const d = Object.getOwnPropertyDescriptor(obj, name);
      if (!d || !d.set || !d.configurable) continue;
      Object.defineProperty(obj, name, {configurable: true, enumerable: d.enumerable, get: d.get,
        set(fn) { try { if (typeof fn === 'function') record(this, name.slice(2), fn, 'property'); } catch (e) {}
                  return d.set.call(this, fn); }});
    }
  };
  [HTMLElement.prototype, SVGElement.prototype, Document.prototype, window].forEach((o) => { try { wrapOn(o); } catch (e) {} });

  // Fetches in flight: the probe waits for them before it collects, so whether the rejection of a request the
  // sandbox blocked is seen does not depend on how fast the blocking round trip is under load. The count drops
  // 30 ms after the settling: the app's unhandledrejection is dispatched by a task of another task source, which
  // a 0 ms timer may overtake.
  R.inflight = 0;
  if (typeof window.fetch === 'function') {
    const origFetch = window.fetch;
    const done = () => origSetTimeout(() => { R.inflight--; }, 30);
    window.fetch = function (...args) {
      R.inflight++;
      let p;
      try { p = origFetch.apply(this, args); } catch (e) { done(); throw e; }
      p.then(done, done);
      return p;
    };
  }

  // Errors and rejections, tagged with the action that was running (-1: load or idle).
  origAdd.call(window, 'error', (e) => {
    if (!(e instanceof ErrorEvent)) return;  // a resource that failed to load, recorded elsewhere
    R.errors.push({action: R.action, sync: R.inDispatch, kind: 'error', name: (e.error && e.error.name) || 'Error',
                   message: String(e.message || '').slice(0, 500), stack: String((e.error && e.error.stack) || '').slice(0, 2000),
                   filename: e.filename || '', line: e.lineno || null, column: e.colno || null});
  }, true);
  origAdd.call(window, 'unhandledrejection', (e) => {
    const r = e.reason;
    R.errors.push({action: R.action, sync: false, kind: 'rejection', name: (r && r.name) || 'UnhandledRejection',
                   message: String((r && r.message) || r).slice(0, 500), stack: String((r && r.stack) || '').slice(0, 2000),
                   filename: '', line: null, column: null});
  });
  // A submit nobody prevented navigates away: remember the event to look at after the action.
  origAdd.call(window, 'submit', (e) => { R.submits.push({action: R.action, event: e, form: e.target}); }, true);

  // Dialogs, answered by their own init script (tasks/env/probe.py DIALOGS_JS), recorded here.
  R.dialog = (type, msg) => {
    R.dialogs.push({action: R.action, type, message: String(msg === undefined ? '' : msg).slice(0, 300)});
  };

  // Liveness: animation frames requested, draw calls (WebGL scenes re-render on demand), a heartbeat timer.
  if (appRaf) window.requestAnimationFrame = function (cb) { R.rafs++; return appRaf.call(window, cb); };
  for (const C of [window.WebGLRenderingContext, window.WebGL2RenderingContext]) {
    if (!C) continue;
    for (const m of ['drawArrays', 'drawElements', 'drawArraysInstanced', 'drawElementsInstanced']) {
      const f = C.prototype[m];
      if (typeof f === 'function') C.prototype[m] = function () { R.draws++; return f.apply(this, arguments); };
    }
  }
  // The context each canvas was given (the first type a script asked for), read later without creating one.
  const ctxType = new WeakMap();
  const origGetContext = HTMLCanvasElement.prototype.getContext;
  HTMLCanvasElement.prototype.getContext = function (type) {
    const ctx = origGetContext.apply(this, arguments);
    if (ctx && !ctxType.has(this)) ctxType.set(this, String(type));
    return ctx;
  };
  const beat = () => { R.hb++; origSetTimeout(beat, 100); };
  origSetTimeout(beat, 100);
  const watch = () => {
    try {
      new MutationObserver((ms) => { R.mutations += ms.length; })
        .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
    } catch (e) {}
  };
  if (document.documentElement) watch(); else origAdd.call(document, 'readystatechange', watch, {once: true});

  // ---- after load: the plan (what to exercise) and the run ------------------------------------------
  const CLICK_TYPES = new Set(['click', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'touchstart', 'touchend', 'dblclick']);
  const DRAG_TYPES = new Set(['mousemove', 'pointermove', 'touchmove', 'drag', 'dragstart', 'wheel']);
  const KEY_TYPES = new Set(['keydown', 'keyup', 'keypress']);
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return false;
    const s = getComputedStyle(el);
    return s.visibility !== 'hidden' && s.display !== 'none' && !el.closest('[hidden],[inert]');
  };
  const describe = (t) => {
    if (t === window) return 'window';
    if (t === document) return 'document';
    if (!(t instanceof Element)) return (t && t.constructor && t.constructor.name) || '?';
    let s = t.tagName.toLowerCase();
    if (t.id) s += '#' + t.id;
    else if (t.classList && t.classList.length) s += '.' + [...t.classList].slice(0, 2).join('.');
    return s;
  };
  const label = (el) => String(el.getAttribute('aria-label') || el.innerText || el.value || el.title ||
                                el.getAttribute('placeholder') || el.id || '').trim().replace(/\s+/g, ' ').slice(0, 80);
  const KEY_RE = /(?:\.key|\.code)\s*===?\s*['"]([^'"]{1,12})['"]|case\s+['"]([^'"]{1,12})['"]\s*:|keyCode\s*===?\s*(\d{1,3})|['"]([^'"]{1,12})['"]\s*===?\s*\w+\.(?:key|code)/g;
  const KEYCODES = {ArrowLeft: 37, ArrowUp: 38, ArrowRight: 39, ArrowDown: 40, ' ': 32, Enter: 13, Escape: 27, Space: 32};
  const keyFromCode = (n) => ({37: 'ArrowLeft', 38: 'ArrowUp', 39: 'ArrowRight', 40: 'ArrowDown', 32: ' ', 13: 'Enter', 27: 'Escape'})[n] ||
    (n >= 65 && n <= 90 ? String.fromCharCode(n + 32) : n >= 48 && n <= 57 ? String.fromCharCode(n) : null);

  R.plan = (maxActions, maxKeys) => {
    const byTarget = new Map();
    R.listeners.forEach((l) => { if (!byTarget.has(l.target)) byTarget.set(l.target, new Set()); byTarget.get(l.target).add(l.type); });
    for (const el of document.querySelectorAll('*')) {  // on* attributes written in the markup
      for (const a of el.attributes) {
        if (a.name.startsWith('on') && a.name.length > 2) {
          const id = targetId(el);
          if (!byTarget.has(id)) byTarget.set(id, new Set());
          byTarget.get(id).add(a.name.slice(2));
          R.listeners.push({type: a.name.slice(2), target: id, via: 'attribute', src: a.value.slice(0, 400), stack: ''});
        }
      }
    }
    const has = (el, set) => { const i = R.targets.indexOf(el); return i >= 0 && byTarget.has(i) && [...byTarget.get(i)].some((t) => set.has(t)); };
    const actions = [];
    const seen = new Set();
    const push = (a) => { if (actions.length < maxActions) actions.push(a); };
    const els = [...document.querySelectorAll('body *')];
    for (const el of els) {
      if (seen.has(el) || !visible(el) || el.closest('[disabled]')) continue;
      const tag = el.tagName, type = (el.getAttribute('type') || '').toLowerCase();
      let kind = null;
      if (tag === 'SELECT') kind = 'select';
      else if (tag === 'TEXTAREA' || (tag === 'INPUT' && /^(|text|number|email|search|tel|url|password|range)$/.test(type))) kind = 'fill';
      else if (tag === 'CANVAS' || has(el, DRAG_TYPES)) kind = 'drag';
      else if (tag === 'BUTTON' || tag === 'SUMMARY' || (tag === 'A' && el.hasAttribute('href')) ||
               (tag === 'INPUT' && /^(button|submit|reset|checkbox|radio|image)$/.test(type)) ||
               /^(button|tab|checkbox|radio|menuitem|switch|option|link)$/.test(el.getAttribute('role') || '') ||
               has(el, CLICK_TYPES)) kind = 'click';
      if (!kind) continue;
      seen.add(el);
      push({kind, target: targetId(el), desc: describe(el), label: label(el), tag: tag.toLowerCase(), type,
            handled: has(el, CLICK_TYPES) || has(el, DRAG_TYPES)});
    }
    // Keys the handlers compare against, then the usual game and form keys.
    const keys = [];
    const keyTargets = [];
    R.listeners.forEach((l) => {
      if (!KEY_TYPES.has(l.type)) return;
      if (!keyTargets.includes(l.target)) keyTargets.push(l.target);
      let m; KEY_RE.lastIndex = 0;
      while ((m = KEY_RE.exec(l.src)) !== null) {
        const k = m[1] || m[2] || m[4] || keyFromCode(Number(m[3]));
        if (k && !keys.includes(k)) keys.push(k);
      }
    });
    if (keyTargets.length) {
      for (const k of ['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', ' ', 'Enter']) if (!keys.includes(k)) keys.push(k);
      const tgt = keyTargets.map((i) => R.targets[i]).find((t) => t instanceof Element && visible(t));
      for (const k of keys.slice(0, maxKeys)) push({kind: 'key', key: k, target: tgt ? targetId(tgt) : null, desc: tgt ? describe(tgt) : 'document', label: k});
    }
    const listeners = R.listeners.map((l) => ({type: l.type, via: l.via, src: l.src, stack: l.stack,
                                                target: describe(R.targets[l.target]), target_index: l.target}));
    return {actions, listeners};
  };

  // Deterministic values from the seed (mulberry32).
  const rng = (seed) => () => { seed |= 0; seed = seed + 0x6D2B79F5 | 0; let t = Math.imul(seed ^ seed >>> 15, 1 | seed);
    t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t; return ((t ^ t >>> 14) >>> 0) / 4294967296; };
  const WORDS = ['hello', 'test', 'apple', 'Ada', 'blue', 'note one'];
  const canvasHash = () => {
    let h = 0;
    for (const c of document.querySelectorAll('canvas')) {
      try {
        if (!c.width || !c.height) continue;
        const s = document.createElement('canvas'); s.width = 16; s.height = 16;
        const x = s.getContext('2d'); x.drawImage(c, 0, 0, 16, 16);
        const d = x.getImageData(0, 0, 16, 16).data;
        for (let i = 0; i < d.length; i += 4) h = (Math.imul(h, 31) + d[i] + d[i + 1] * 7 + d[i + 2] * 13) | 0;
      } catch (e) {}
    }
    return h;
  };
  const state = () => ({m: R.mutations, c: canvasHash(), s: window.scrollX + ',' + window.scrollY, d: R.draws,
                        dl: R.dialogs.length, sub: R.submits.length, v: values()});
  const values = () => {  // state of form controls the app may change (not the one we just filled)
    let s = '';
    for (const el of document.querySelectorAll('input,select,textarea,progress,meter')) s += (el.checked ? 1 : 0) + ':' + el.value + '|';
    return s.length > 4000 ? s.length + s.slice(0, 200) : s;
  };
  const frame = () => (window.__rrTime && !window.__rrTime.fallback ? window.__rrTime.advance(FRAME_MS) :
    new Promise((res) => { const t = origSetTimeout(res, 60); if (origRaf) origRaf(() => origSetTimeout(() => { origClearTimeout(t); res(); }, 0)); }));
  const center = (el) => { const r = el.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; };
  const fire = (el, type, x, y, extra) => {
    const init = Object.assign({bubbles: true, cancelable: true, composed: true, clientX: x, clientY: y, button: 0,
                                buttons: type.endsWith('down') || type.endsWith('move') ? 1 : 0, view: window}, extra || {});
    const E = type.startsWith('pointer') ? PointerEvent : MouseEvent;
    return el.dispatchEvent(new E(type, type.startsWith('pointer') ? Object.assign({pointerId: 1, pointerType: 'mouse', isPrimary: true}, init) : init));
  };
  const press = (el, key) => {
    const code = key === ' ' ? 'Space' : key.length === 1 ? (/[a-z]/i.test(key) ? 'Key' + key.toUpperCase() : /\d/.test(key) ? 'Digit' + key : key) : key;
    const keyCode = KEYCODES[key] || (key.length === 1 ? key.toUpperCase().charCodeAt(0) : 0);
    for (const t of ['keydown', 'keypress', 'keyup']) {
      if (t === 'keypress' && key.length !== 1 && key !== 'Enter') continue;
      el.dispatchEvent(new KeyboardEvent(t, {key, code, keyCode, which: keyCode, bubbles: true, cancelable: true, composed: true}));
    }
  };
  const act = (a, rand) => {
    const el = a.target === null ? (document.activeElement || document.body) : R.targets[a.target];
    if (!el || !el.isConnected) return 'gone';
    if (a.kind === 'key') { press(el === document ? document.body : el, a.key); return 'ok'; }
    if (a.kind === 'fill') {
      el.focus();
      const num = el.type === 'number' || el.type === 'range';
      const v = num ? String(el.min && el.max ? Math.round(+el.min + (+el.max - +el.min) * rand()) : 1 + Math.floor(rand() * 9))
                    : el.type === 'email' ? 'ada@example.org' : el.type === 'url' ? 'https://example.org' : WORDS[Math.floor(rand() * WORDS.length)];
      el.value = v;
      el.dispatchEvent(new Event('input', {bubbles: true}));
      el.dispatchEvent(new Event('change', {bubbles: true}));
      if (el.tagName === 'INPUT') press(el, 'Enter');
      return 'ok';
    }
    if (a.kind === 'select') {
      if (el.options.length > 1) el.selectedIndex = el.selectedIndex === el.options.length - 1 ? 0 : el.options.length - 1;
      el.dispatchEvent(new Event('input', {bubbles: true}));
      el.dispatchEvent(new Event('change', {bubbles: true}));
      return 'ok';
    }
    const [x, y] = center(el);
    if (a.kind === 'drag') {
      const r = el.getBoundingClientRect();
      const dx = Math.min(r.width / 4, 80), dy = Math.min(r.height / 4, 60);
      fire(el, 'pointerdown', x - dx, y - dy); fire(el, 'mousedown', x - dx, y - dy);
      for (let i = 1; i <= 4; i++) { const px = x - dx + dx * i / 2, py = y - dy + dy * i / 2; fire(el, 'pointermove', px, py); fire(el, 'mousemove', px, py); }
      fire(el, 'pointerup', x + dx, y + dy); fire(el, 'mouseup', x + dx, y + dy); fire(el, 'click', x + dx, y + dy, {detail: 1});
      return 'ok';
    }
    if (typeof el.focus === 'function') el.focus();
    fire(el, 'pointerdown', x, y); fire(el, 'mousedown', x, y); fire(el, 'pointerup', x, y); fire(el, 'mouseup', x, y);
    fire(el, 'click', x, y, {detail: 1});
    return 'ok';
  };

  // Bounded wait for the app's fetches to settle, so a rejection lands while its action is still the current one.
  const settleRequests = (ms) => new Promise((resolve) => {
    const t0 = realNow();
    const tick = () => (R.inflight <= 0 || realNow() - t0 > ms) ? resolve() : origSetTimeout(tick, 10);
    tick();
  });
  R.run = async (actions, budgetMs, seed, requestWaitMs, wallMs) => {
    const rand = rng(seed);
    const t0 = performance.now(), r0 = realNow();
    const log = [];
    let cut = null;
    for (let i = 0; i < actions.length; i++) {
      // the budget is page time; wallMs bounds it in wall time too, so a scene too heavy for the machine to
      // draw at page speed runs fewer actions instead of running into the hang limit (said: cut, a load's mark)
      if (performance.now() - t0 > budgetMs) break;
      if (realNow() - r0 > wallMs) { cut = 'wall'; break; }
      const a = actions[i];
      const before = state(), nErr = R.errors.length;
      R.action = i;
      mark({action: i});
      R.inDispatch = true;
      let outcome;
      try { outcome = act(a, rand); } catch (e) { outcome = 'probe_error: ' + e; }
      R.inDispatch = false;
      await frame();
      const after = state();
      const sub = R.submits.slice(before.sub).find((s) => !s.event.defaultPrevented);
      const changed = [];
      for (const k of PROBE_CHANGES) if (before[k] !== after[k]) changed.push(k);  // the codes: tasks/env/probe.py CHANGES
      log.push({i, outcome, changed, errors: R.errors.length - nErr,
                submit: sub ? {form: describe(sub.form), action_attr: sub.form.getAttribute('action')} : null});
    }
    await settleRequests(requestWaitMs);
    R.action = -2;  // after the run: errors from here on are not any action's
    return {log, elapsed_ms: performance.now() - t0, cut};
  };
  // A visual sample without a screenshot (a screenshot costs the renderer a full frame and an encode):
  // canvas pixels, DOM mutations (JS-driven motion writes styles or text) and running CSS/Web animations.
  const running = () => { try { return document.getAnimations().filter((a) => a.playState === 'running').length; } catch (e) { return 0; } };
  R.snapshot = () => ({rafs: R.rafs, draws: R.draws, mutations: R.mutations, hb: R.hb, canvas: canvasHash(), animations: running(),
                        t: performance.now()});  // the page's clock: the controlled one where it runs on it
  R.collect = () => ({errors: R.errors, dialogs: R.dialogs});
  // Visible canvases of at least 48x48 CSS pixels: whether anything is drawn on each (blank: no script ever gave
  // it a context, or its 2D pixels are all one colour; a WebGL one is not read: null), with the ids of the canvas
  // and its ancestors, so an item naming a drawing area finds the canvases in it.
  R.canvases = () => {
    const out = [];
    for (const c of document.querySelectorAll('canvas')) {
      const r = c.getBoundingClientRect(), st = getComputedStyle(c);
      if (r.width < 48 || r.height < 48 || st.visibility === 'hidden' || !c.width || !c.height) continue;
      const type = ctxType.get(c);
      let blank = type === undefined ? true : null;
      if (type === '2d') {
        try {
          const d = origGetContext.call(c, '2d').getImageData(0, 0, c.width, c.height).data;
          blank = true;
          for (let k = 4; k < d.length; k += 4) {
            if (d[k] !== d[0] || d[k + 1] !== d[1] || d[k + 2] !== d[2] || d[k + 3] !== d[3]) { blank = false; break; }
          }
        } catch (e) { blank = null; }
      }
      const ids = [];
      for (let e = c; e && e !== document.documentElement; e = e.parentElement) if (e.id) ids.push(e.id);
      out.push({ids, blank, context: type || null});
      if (out.length >= 20) break;
    }
    return out;
  };
})();
