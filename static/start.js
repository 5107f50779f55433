// The starting page: the browser client with a token from this site's mint route and its live connection.

import { pageClient } from "./page-client.js";

const $ = (id) => document.getElementById(id);
const client = pageClient();

client.on("token", ({ expiresAt, fingerprint }) => {
  $("token-fingerprint").textContent = `…${fingerprint}`;
  $("token-expires-at").textContent = new Date(Date.parse(expiresAt)).toLocaleTimeString();
});

client.on("state", (state) => {
  $("connection-state").dataset.state = state;
  $("connection-state").textContent = state;
});

client.on("error", (error) => {
  $("client-error").hidden = false;
  $("client-error").textContent = `${error.name}: ${error.message}`;
});

client.connect().catch(() => {}); // a failure is shown by the "error" listener; the client retries by itself
