// The browser client of a page of this site: configured from the page's `client-config` JSON (written by
// config/browser_client.py), its token minted by this site's route with the CSRF token of the session.

import { SportsClient } from "./sports/sports-client.js";

/** Django rotates the CSRF token at login, so it is read from the cookie at every use. */
export function csrfToken() {
  return document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/)?.[1] ?? "";
}

/** The page's configuration, as config/browser_client.py wrote it. */
export const pageConfig = JSON.parse(document.getElementById("client-config").textContent);

/** A SportsClient for this page. */
export function pageClient() {
  return new SportsClient({
    authEndpoint: pageConfig.authEndpoint,
    authHeaders: () => ({ "X-CSRFToken": csrfToken() }),
    refreshLeewaySec: pageConfig.refreshLeewaySec,
    ...(pageConfig.baseUrl ? { baseUrl: pageConfig.baseUrl } : {}),
    ...(pageConfig.wsUrl ? { wsUrl: pageConfig.wsUrl } : {}),
  });
}
