// The starting page: the browser client with a token from this site's mint route and its live connection.

import { SportsClient } from "./sports/sports-client.js";

const config = JSON.parse(document.getElementById("client-config").textContent);
const $ = (id) => document.getElementById(id);

/** Django rotates the CSRF token at login, so it is read from the cookie at every use. */
function csrfToken() {
  return document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/)?.[1] ?? "";
}

const client = new SportsClient({
  authEndpoint: config.authEndpoint,
  authHeaders: () => ({ "X-CSRFToken": csrfToken() }),
  refreshLeewaySec: config.refreshLeewaySec,
  ...(config.baseUrl ? { baseUrl: config.baseUrl } : {}),
  ...(config.wsUrl ? { wsUrl: config.wsUrl } : {}),
});

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
