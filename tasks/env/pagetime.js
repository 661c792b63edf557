// Page time under the environment's control (tasks/env/pagetime.py), installed as an init script after
// Playwright's clock (context.clock, paused at a fixed instant): the page's Date, timers, animation frames,
// idle callbacks and performance.now belong to that clock, which moves only when the environment advances it
// (advance()). This script adds what the environment needs to advance it well and to know when it cannot:
// - an error thrown in a timer or frame callback is reported as the page's own uncaught error (the library's
//   clock would catch it and hand it to whoever advanced the clock);
// - when each pending timer is due, so a page with nothing due before a limit is known to be still;
// - real-time work still running (requests, images, dynamic scripts, finite CSS / Web animations, which run on
//   the compositor's clock): a verdict waits for it in wall time;
// - APIs whose time the library's clock does not keep (Web Audio's currentTime, media playback, workers) and
//   busy waiting on the clock (a page that reads it in a tight loop would never see it move): the page leaves
//   the controlled clock for the real one (the clock resumes), and `fallback` says why;
// - the page's own clock (`lived`): time the page lived on its real timers, a beat that does not count the
//   time a starved renderer was not running; it is page time after a fallback, and a heartbeat always.
((cfg) => {
  if (window.__rrTime) return;
  const pw = globalThis.__pwClock;
  const nat = pw ? pw.builtins : {setTimeout: window.setTimeout.bind(window), performance: window.performance};
  const realNow = nat.performance.now.bind(nat.performance);
  const T = {mutations: 0, fallback: pw ? null : 'the controlled clock is not installed', inflight: 0};
  Object.defineProperty(window, '__rrTime', {value: T, enumerable: false});

  // The page's own clock: every beat adds the time since the last one, at most two beats' worth.
  let last = realNow(), lived = 0;
  const beat = () => { const t = realNow(); lived += Math.min(t - last, 2 * cfg.beat_ms); last = t; nat.setTimeout(beat, cfg.beat_ms); };
  nat.setTimeout(beat, cfg.beat_ms);
  T.lived = () => lived + Math.min(realNow() - last, 2 * cfg.beat_ms);

  const leave = (why) => {
    if (T.fallback) return;
    T.fallback = why;
    try { pw.controller.resume(); } catch (e) {}  // from here on the page's timers run in real time
  };
  T.leave = leave;
  const ticks = () => pw.controller.performanceNow();
  if (pw) {
    // Timers: callbacks guarded (errors reported), due times kept.
    const live = new Map();  // timer id (one id space for every kind) -> due, clock ticks (a lower bound)
    const call = (cb, args) => {
      try { return typeof cb === 'function' ? cb.apply(window, args) : (0, eval)(String(cb)); } catch (e) { reportError(e); }
    };
    const delay = (ms) => { const d = +ms; return Number.isFinite(d) && d > 0 && d <= 2147483647 ? d : 0; };
    const orig = {};
    for (const k of ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'requestAnimationFrame',
                     'cancelAnimationFrame', 'requestIdleCallback', 'cancelIdleCallback']) orig[k] = window[k];
    window.setTimeout = function (cb, ms, ...args) {
      let id = null;
      id = orig.setTimeout((...a) => { live.delete(id); return call(cb, a); }, ms, ...args);
      live.set(id, ticks() + delay(ms));
      return id;
    };
    window.setInterval = function (cb, ms, ...args) {
      // the library repeats a 0 ms interval without moving time; browsers clamp nested timers to 4 ms
      const d = Math.max(delay(ms), 4);
      let id = null;
      id = orig.setInterval((...a) => { live.set(id, ticks() + d); return call(cb, a); }, d, ...args);
      live.set(id, ticks() + d);
      return id;
    };
    // WebGL frames: their drawing runs in the GPU process (software GL here), where the renderer's own cost
    // (max_lag) cannot see it, and every frame of page time would be drawn. A browser on such a machine drops
    // them; here, from the page's first WebGL context on, its frames come on a fixed grid of page time
    // (cfg.gl_frame_ms), the same on a quiet or a busy machine.
    let glFrames = false;
    const getContext = HTMLCanvasElement.prototype.getContext;
    HTMLCanvasElement.prototype.getContext = function (type, ...a) {
      const c = getContext.call(this, type, ...a);
      if (c && /webgl/i.test(String(type))) glFrames = true;
      return c;
    };
    const gridTimers = new Set();  // frames scheduled on the grid (library timeouts, cancelled as such)
    window.requestAnimationFrame = function (cb) {
      let id = null;
      if (glFrames && cfg.gl_frame_ms > 16) {
        const now = ticks(), wait = cfg.gl_frame_ms - (now % cfg.gl_frame_ms);
        id = orig.setTimeout(() => { live.delete(id); gridTimers.delete(id); return call(cb, [ticks()]); }, wait);
        gridTimers.add(id);
        live.set(id, now + wait);
        return id;
      }
      id = orig.requestAnimationFrame((...a) => { live.delete(id); return call(cb, a); });
      live.set(id, ticks());
      return id;
    };
    window.requestIdleCallback = function (cb, opts) {
      let id = null;
      id = orig.requestIdleCallback((...a) => { live.delete(id); return call(cb, a); }, opts);
      live.set(id, ticks());
      return id;
    };
    for (const k of ['clearTimeout', 'clearInterval', 'cancelAnimationFrame', 'cancelIdleCallback']) {
      window[k] = function (id) {
        live.delete(id);
        if (gridTimers.delete(id)) return orig.clearTimeout(id);
        return orig[k](id);
      };
    }
    T.nextDue = () => { let m = null; for (const d of live.values()) if (m === null || d < m) m = d; return m; };

    // Busy waiting: more than cfg.busy_reads clock reads in one run of the event loop's task.
    let reads = 0, armed = false;
    const read = () => {
      if (!armed) { armed = true; queueMicrotask(() => { reads = 0; armed = false; }); }
      if (++reads === cfg.busy_reads) leave(`busy waiting: the clock read ${cfg.busy_reads} times in one task`);
    };
    const fakeNow = Date.now, fakePerf = performance.now;
    window.Date = new Proxy(window.Date, {
      construct(t, args, nt) { if (!args.length) read(); return Reflect.construct(t, args, nt); },
      apply(t, self, args) { read(); return Reflect.apply(t, self, args); },
    });
    Date.now = () => { read(); return fakeNow(); };
    performance.now = () => { read(); return fakePerf(); };

    // APIs on clocks the library does not control.
    const onUse = (proto, name, why) => {
      const d = proto && Object.getOwnPropertyDescriptor(proto, name);
      if (!d) return;
      if (d.get) Object.defineProperty(proto, name, {...d, get() { leave(why); return d.get.call(this); }});
      else if (typeof d.value === 'function') {
        const f = d.value;
        Object.defineProperty(proto, name, {...d, value: function (...a) { leave(why); return f.apply(this, a); }});
      }
    };
    onUse(window.BaseAudioContext && BaseAudioContext.prototype, 'currentTime', 'Web Audio time (AudioContext.currentTime)');
    onUse(HTMLMediaElement.prototype, 'play', 'media playback (HTMLMediaElement.play)');
    onUse(HTMLMediaElement.prototype, 'currentTime', 'media time (HTMLMediaElement.currentTime)');
    for (const k of ['Worker', 'SharedWorker']) {
      if (window[k]) window[k] = new Proxy(window[k], {construct(t, a, nt) { leave(`a ${k} (its timers are real)`); return Reflect.construct(t, a, nt); }});
    }
  }

  // Leaving the page: the environment reuses the tab for the next check, so before it navigates, the handlers
  // that run on the way out (and could store state for the next document) are removed and storage cleared.
  const OUT = new Set(['beforeunload', 'unload', 'pagehide', 'visibilitychange']);
  const outs = [];
  const addEv = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function (type, fn, opts) {
    if ((this === window || this === document) && OUT.has(String(type).toLowerCase())) outs.push([this, type, fn, opts]);
    return addEv.call(this, type, fn, opts);
  };
  T.forget = () => {
    for (const [t, type, fn, opts] of outs) t.removeEventListener(type, fn, opts);
    window.onbeforeunload = window.onunload = window.onpagehide = document.onvisibilitychange = null;
    try { sessionStorage.clear(); } catch (e) {}
    window.name = '';
  };

  // Real-time work a verdict waits for: requests, images and dynamic scripts loading, finite animations.
  if (typeof window.fetch === 'function') {
    const f = window.fetch;
    window.fetch = function (...a) {
      T.inflight++;
      let p;
      try { p = f.apply(this, a); } catch (e) { T.inflight--; throw e; }
      p.then(() => { T.inflight--; }, () => { T.inflight--; });
      return p;
    };
  }
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...a) {
    T.inflight++;
    this.addEventListener('loadend', () => { T.inflight--; }, {once: true});
    try { return send.apply(this, a); } catch (e) { T.inflight--; throw e; }
  };
  const scripts = new Set();
  const watch = () => {
    try {
      new MutationObserver((ms) => {
        T.mutations += ms.length;
        seeRunning();  // a class or style just changed: a transition it starts is seen before any frame runs it
        for (const m of ms) for (const n of m.addedNodes) {
          if (n.tagName === 'SCRIPT' && n.src && document.readyState === 'complete') {
            scripts.add(n);
            const done = () => scripts.delete(n);
            n.addEventListener('load', done, {once: true}); n.addEventListener('error', done, {once: true});
          }
        }
      }).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
    } catch (e) {}
  };
  if (document.documentElement) watch(); else document.addEventListener('readystatechange', watch, {once: true});
  // A finite transition or animation counts from when it is seen (or its start event comes) until its end
  // event has been dispatched: a finished one's end handler runs a moment later, in a later frame.
  const finite = (a) => a.effect && a.effect.getComputedTiming().endTime !== Infinity;
  const ending = new Map();
  const keyOf = (a) => (window.CSSTransition && a instanceof CSSTransition ? 't:' + a.transitionProperty :
                        window.CSSAnimation && a instanceof CSSAnimation ? 'a:' + a.animationName : a);
  const seeRunning = () => {
    try {
      // a style change not yet computed has started no transition: compute it first (a layout read does)
      if (document.body) document.body.getBoundingClientRect();
      for (const a of document.getAnimations()) {
        if (a.playState !== 'running' || !finite(a) || !(a.effect.target instanceof Element)) continue;
        const k = keyOf(a), t = a.effect.target;
        if ((ending.get(t) || new Set()).has(k)) continue;
        ends(t, k, true);
        if (k === a) for (const e of ['finish', 'cancel', 'remove']) a.addEventListener(e, () => ends(t, a, false), {once: true});
      }
    } catch (e) {}
  };
  const ends = (t, name, on) => {
    if (!(t instanceof Element)) return;
    const names = ending.get(t) || new Set();
    if (on) names.add(name); else names.delete(name);
    if (names.size) ending.set(t, names); else ending.delete(t);
  };
  addEv.call(window, 'transitionrun', (e) => ends(e.target, 't:' + e.propertyName, true), true);
  for (const k of ['transitionend', 'transitioncancel']) addEv.call(window, k, (e) => ends(e.target, 't:' + e.propertyName, false), true);
  addEv.call(window, 'animationstart', (e) => {
    try { if (e.target.getAnimations().some((a) => a.animationName === e.animationName && finite(a))) ends(e.target, 'a:' + e.animationName, true); } catch (x) {}
  }, true);
  for (const k of ['animationend', 'animationcancel']) addEv.call(window, k, (e) => ends(e.target, 'a:' + e.animationName, false), true);
  const animate = Element.prototype.animate;
  if (animate) {
    Element.prototype.animate = function (...a) {
      const an = animate.apply(this, a);
      try {
        if (finite(an)) {
          ends(this, an, true);
          for (const k of ['finish', 'cancel', 'remove']) an.addEventListener(k, () => ends(this, an, false), {once: true});
        }
      } catch (e) {}
      return an;
    };
  }
  const endsPending = () => { let n = 0; for (const [t, names] of ending) { if (t.isConnected) n += names.size; else ending.delete(t); } return n; };
  const loadingImages = () => { let n = 0; for (const i of document.images) if (!i.complete) n++; return n; };
  T.scriptsLoading = () => scripts.size;  // asked for after load, not yet run or failed
  T.state = () => ({ticks: pw ? ticks() : null, mutations: T.mutations, next_due: pw ? T.nextDue() : null,
                    real_work: T.inflight + scripts.size + loadingImages() + (seeRunning(), endsPending()),
                    fallback: T.fallback,
                    lived: T.lived()});
  T.advance = async (ms) => {
    if (!T.fallback && ms > 0) {
      try { await pw.controller.runFor(ms); } catch (e) { reportError(e); }
    }
    return T.state();
  };
  // The load page's time, in steps: the real time its timers and frames take to run is measured here, in the
  // renderer, so the round trips of a busy machine's event loop never count against the page. That real time
  // still holds the moments the machine did not run the renderer at all (another process had the core); such a
  // stall lands in one step, so the page's lag is read over every step of page time it has passed so far (across
  // passes) less its slowest one: a heavy page lags in every step and leaves after two, a light page whose
  // renderer the machine once stopped for a second keeps the controlled clock (the same frames as on a quiet one).
  const lag = {done: 0, cost: 0, worst: 0, steps: 0};
  T.pass = async (ms, step, maxLag, why) => {
    let done = 0;
    while (done < ms && !T.fallback) {
      const s = Math.min(step, ms - done), t = realNow();
      await T.advance(s);
      const c = realNow() - t;
      done += s;
      lag.done += s; lag.cost += c; lag.steps += 1;
      if (c - s * maxLag > lag.worst) lag.worst = c - s * maxLag;
      if (done < ms && lag.steps > 1 && lag.cost - lag.worst > lag.done * maxLag)
        leave(why);
    }
    return {done, fallback: T.fallback};
  };
})
