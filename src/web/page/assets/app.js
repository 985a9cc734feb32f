// dshq's reviewer page: keyboard shortcuts, live updates, and push to this device. The page works without
// this script (every answer is a form, confirmed on a server-rendered summary page);
// nothing here sends an answer, and nothing here inserts markup built from data: the
// queue fragment is rendered and escaped by the server.
"use strict";
(function () {
  var meta = function (name) {
    var m = document.querySelector('meta[name="' + name + '"]');
    return m ? m.getAttribute("content") : null;
  };
  var live = meta("dshq-live");
  var csrf = meta("dshq-csrf");

  function typing(e) {
    var t = e.target;
    if (!t || !t.tagName) return false;
    var tag = t.tagName.toLowerCase();
    return tag === "textarea" || tag === "select" ||
      (tag === "input" && ["text", "password", "search"].indexOf(t.type) >= 0);
  }

  // ---- the queue: j/k move, Enter opens ----
  var sel = -1;
  function rows() { return Array.prototype.slice.call(document.querySelectorAll("#queue tr.row")); }
  function mark() {
    var rs = rows();
    if (rs.length === 0) { sel = -1; return; }
    if (sel >= rs.length) sel = rs.length - 1;
    rs.forEach(function (r, i) { r.classList.toggle("selected", i === sel); });
    if (sel >= 0) rs[sel].scrollIntoView({ block: "nearest" });
  }

  // ---- a request: j/k move between questions, 1-9 pick ----
  var cur = 0;
  function questions() { return Array.prototype.slice.call(document.querySelectorAll("fieldset.q")); }
  function markQ() {
    var qs = questions();
    if (qs.length === 0) return;
    cur = Math.max(0, Math.min(cur, qs.length - 1));
    qs.forEach(function (q, i) { q.classList.toggle("current", i === cur); });
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e)) return;
    var qs = questions();
    if (document.getElementById("queue")) {
      var rs = rows();
      if (e.key === "j") { sel = Math.min(sel + 1, rs.length - 1); mark(); e.preventDefault(); }
      else if (e.key === "k") { sel = Math.max(sel - 1, 0); mark(); e.preventDefault(); }
      else if (e.key === "Enter" && sel >= 0 && rs[sel]) {
        window.location.assign(rs[sel].getAttribute("data-href"));
        e.preventDefault();
      }
    } else if (qs.length > 0) {
      if (e.key === "j") { cur++; markQ(); e.preventDefault(); }
      else if (e.key === "k") { cur--; markQ(); e.preventDefault(); }
      else if (/^[1-9]$/.test(e.key)) {
        var q = qs[cur];
        if (!q || q.disabled) return;
        var input = q.querySelector('input[data-key="' + e.key + '"]');
        if (input) { input.checked = input.type === "checkbox" ? !input.checked : true; input.focus(); e.preventDefault(); }
      }
    }
  });
  document.addEventListener("focusin", function (e) {
    var qs = questions();
    for (var i = 0; i < qs.length; i++) {
      if (qs[i].contains(e.target)) { cur = i; markQ(); }
    }
  });

  // ---- live updates ----
  if (!live || typeof EventSource === "undefined") { markQ(); return; }
  var params = live.indexOf("request?") === 0 ? new URLSearchParams(live.slice(8)) : null;
  var src = "/live" + (params ? "?context=" + encodeURIComponent(params.get("context")) : "");
  var es = new EventSource(src);
  var pending = false;
  var again = false;

  function refreshQueue() {
    var holder = document.getElementById("queue-src");
    var q = document.getElementById("queue");
    if (!holder || !q) return;
    // A change during a fetch may be missing from its answer: fetch again after it.
    if (pending) { again = true; return; }
    pending = true;
    again = false;
    fetch(holder.getAttribute("data-src"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        pending = false;
        if (again) setTimeout(refreshQueue, 0);
        if (html === null) return;
        var id = sel >= 0 && rows()[sel] ? rows()[sel].getAttribute("data-id") : null;
        var tpl = document.createElement("template");
        tpl.innerHTML = html;
        var fresh = tpl.content.firstElementChild;
        if (fresh) q.replaceWith(fresh);
        var rs = rows();
        sel = id ? rs.findIndex(function (r) { return r.getAttribute("data-id") === id; }) : sel;
        mark();
      })
      .catch(function () { pending = false; if (again) setTimeout(refreshQueue, 0); });
  }

  // Connected (again): whatever changed between the page's rendering (or a dropped
  // connection) and now was not streamed, so fetch the queue once.
  es.addEventListener("ready", function () {
    document.body.setAttribute("data-live", "ready");
    if (live === "queue") refreshQueue();
  });
  es.addEventListener("error", function () {
    document.body.setAttribute("data-live", "reconnecting");
  });

  es.addEventListener("change", function (ev) {
    if (live === "queue") { refreshQueue(); return; }
    if (!params) return;
    var c = {};
    try { c = JSON.parse(ev.data); } catch (err) { c = {}; }
    var finals = ["answered", "cancelled", "aborted", "rejected"];
    if (c.id === params.get("id") && finals.indexOf(c.status) >= 0) {
      var gone = document.getElementById("gone");
      if (gone && !document.getElementById("send")) {
        gone.hidden = false;
        questions().forEach(function (q) { q.disabled = true; });
      }
    }
  });

  // The reviewer is here: tell the host (at most every 20 s), so it keeps the lease.
  if (params && csrf) {
    var last = 0;
    var ping = function () {
      var now = Date.now();
      if (now - last < 20000) return;
      last = now;
      fetch("/live/active?context=" + encodeURIComponent(params.get("context")), {
        method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": csrf }
      }).catch(function () {});
    };
    ["keydown", "mousedown", "input", "scroll"].forEach(function (t) {
      document.addEventListener(t, ping, { passive: true });
    });
  }
  markQ();

  // ---- an installable app: the service worker, and push to this device ----
  if ("serviceWorker" in navigator) {
    navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(function () {});
  }
  var pushButton = document.getElementById("push-subscribe");
  function b64url(s) {
    var pad = "=".repeat((4 - s.length % 4) % 4);
    var raw = atob((s + pad).replace(/-/g, "+").replace(/_/g, "/"));
    var out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }
  // Post a subscription (PushSubscription.toJSON()) for the logged-in reviewer.
  function postSubscription(sub) {
    return fetch("/push/subscriptions", {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf, "Content-Type": "application/json" },
      body: JSON.stringify(sub)
    }).then(function (r) {
      if (!r.ok) throw new Error("the daemon refused the subscription (HTTP " + r.status + ")");
      return r.json();
    });
  }
  window.dshqPostSubscription = postSubscription;
  // Remove this reviewer's subscription of a device (its endpoint): true when there was one.
  function removeSubscription(endpoint) {
    return fetch("/push/subscriptions", {
      method: "DELETE", credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf, "Content-Type": "application/json" },
      body: JSON.stringify({ endpoint: endpoint })
    }).then(function (r) {
      if (r.status === 404) return false;
      if (!r.ok) throw new Error("the daemon refused the removal (HTTP " + r.status + ")");
      return true;
    });
  }
  window.dshqRemoveSubscription = removeSubscription;
  var stopButton = document.getElementById("push-unsubscribe");
  if (pushButton && csrf && "serviceWorker" in navigator && "PushManager" in window) {
    fetch("/push/key", { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) return null;
      return r.json();
    }).then(function (k) {
      if (!k || !k.key) return;
      pushButton.hidden = false;
      // This device subscribed already: it can stop (the daemon forgets it, then the
      // browser drops the subscription).
      navigator.serviceWorker.ready.then(function (reg) {
        return reg.pushManager.getSubscription();
      }).then(function (sub) {
        if (!sub || !stopButton) return;
        stopButton.hidden = false;
        stopButton.addEventListener("click", function () {
          stopButton.disabled = true;
          removeSubscription(sub.endpoint).then(function () {
            return sub.unsubscribe();
          }).then(function () {
            stopButton.hidden = true;
            pushButton.textContent = "Notify this device";
            pushButton.disabled = false;
          }).catch(function (err) {
            stopButton.disabled = false;
            stopButton.title = String(err && err.message || err);
          });
        });
      }).catch(function () {});
      pushButton.addEventListener("click", function () {
        pushButton.disabled = true;
        Notification.requestPermission().then(function (perm) {
          if (perm !== "granted") throw new Error("notifications are not allowed for this page");
          return navigator.serviceWorker.ready;
        }).then(function (reg) {
          return reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: b64url(k.key) });
        }).then(function (sub) {
          return postSubscription(sub.toJSON());
        }).then(function () {
          pushButton.textContent = "This device is notified";
        }).catch(function (err) {
          pushButton.disabled = false;
          pushButton.title = String(err && err.message || err);
          pushButton.textContent = "Notify this device (failed: see its tooltip)";
        });
      });
    }).catch(function () {});
  }
})();
