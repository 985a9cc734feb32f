// dshq's service worker: it shows the daemon's push messages as notifications and, when a
// notification carries one-tap actions (approve or deny a plan review, pick one of a
// question's two options), sends the tapped action's signed token back to the daemon
// (`POST /push/act`). Anything else, or an action the daemon refuses, opens the request
// on the page. Nothing here builds markup: a notification shows plain text only.
"use strict";

self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });

self.addEventListener("push", function (event) {
  var m = {};
  try { m = event.data ? event.data.json() : {}; } catch (e) { m = {}; }
  var actions = (m.actions || []).map(function (a) { return { action: a.action, title: a.title }; });
  event.waitUntil(self.registration.showNotification(m.title || "dshq", {
    body: m.body || "",
    tag: m.tag,
    renotify: true,
    requireInteraction: true,
    data: { url: m.url || "/", actions: m.actions || [] },
    actions: actions
  }));
});

function open(url) {
  return self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (ws) {
    for (var i = 0; i < ws.length; i++) {
      if (new URL(ws[i].url).pathname === url && "focus" in ws[i]) return ws[i].focus();
    }
    return self.clients.openWindow(url);
  });
}

self.addEventListener("notificationclick", function (event) {
  var n = event.notification;
  var data = n.data || {};
  var url = data.url || "/";
  var act = (data.actions || []).filter(function (a) { return a.action === event.action; })[0];
  n.close();
  if (!act) { event.waitUntil(open(url)); return; }
  event.waitUntil(self.registration.pushManager.getSubscription().then(function (sub) {
    return fetch("/push/act", {
      method: "POST",
      credentials: "omit",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: act.token, endpoint: sub ? sub.endpoint : "" })
    });
  }).then(function (r) {
    return r.json().catch(function () { return {}; }).then(function (body) {
      if (!r.ok) return open(url);
      return self.registration.showNotification("dshq", {
        body: body.message || "Answered.",
        tag: n.tag
      });
    });
  }).catch(function () { return open(url); }));
});
