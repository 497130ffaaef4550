// The console's one script: the live part follows the daemon over server-sent events, and the
// page's forms are sent without leaving the page (without this script they still work).
"use strict";

function follow() {
  const live = document.getElementById("live");
  if (!live || !window.EventSource) {
    return;
  }
  const events = new EventSource(live.dataset.events);
  // While the person types an answer in the live part, an update waits until they leave the
  // box or send it, so what they typed is not replaced under their fingers.
  let held = null;
  const typing = () => {
    const a = document.activeElement;
    return a instanceof HTMLInputElement && live.contains(a);
  };
  events.addEventListener("live", (e) => {
    if (typing()) {
      held = e.data;
    } else {
      live.innerHTML = e.data;
    }
  });
  live.addEventListener("focusout", () => {
    setTimeout(() => {
      if (held !== null && !typing()) {
        live.innerHTML = held;
        held = null;
      }
    }, 0);
  });
}

async function send(form, button) {
  const body = new URLSearchParams(new FormData(form));
  if (button && button.name) {
    body.set(button.name, button.value);
  }
  const answer = await fetch(form.action, {
    method: "POST",
    body,
    credentials: "same-origin",
    redirect: "manual",
  });
  // A redirect means done (the live part shows what changed); any other answer is a line to
  // read beside the form: what failed, or what to do next.
  if (answer.type !== "opaqueredirect") {
    const note = document.createElement("p");
    note.className = answer.ok ? "done" : "failed";
    note.textContent = await answer.text();
    form.append(note);
  }
}

document.addEventListener("submit", (e) => {
  const form = e.target;
  if (!(form instanceof HTMLFormElement)) {
    return;
  }
  e.preventDefault();
  send(form, e.submitter);
});

document.addEventListener("DOMContentLoaded", follow);
