// A benchmark's WebSocket clients, in a process of their own:
//   node --experimental-websocket tests/bench/socket_clients.mjs --url U --key K --sockets N [--mode idle]
//
// Node's own WebSocket (undici, built into Node 20) is the load generator: it reads a frame for a
// fraction of what a Python client costs, so the clients do not take the core the server needs.
//
// It opens N sockets over the --url values (round robin), at most CONNECTING at a time, sends
// `auth` with an API key (--key, round robin too) and, unless --mode idle, subscribes each to
// football. Every socket reads all the time. It then prints one JSON line,
// {"ready": n, "failed": n, "errors": [...]}, and obeys commands on stdin, one JSON line each:
//
//   measure START END GRACE  (epoch seconds) until END + GRACE, note every matches.event whose
//                            updatedAt lies in [START, END]: per event, how many sockets got it,
//                            each latency from updatedAt, and events older than one already seen;
//   hold SECONDS             keep the sockets open; count pings and closes;
//   closes SECONDS           wait that long; list every close as [key index, epoch seconds, code].
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";

const CONNECTING = 25; // sockets opening at once: a burst of thousands would measure the storm, not the fan-out
const TIMEOUT_MS = 30_000;

const { values } = parseArgs({
  options: {
    url: { type: "string", multiple: true },
    key: { type: "string", multiple: true },
    sockets: { type: "string" },
    mode: { type: "string", default: "subscribe" },
  },
});
const urls = values.url;
const keys = values.key;
const count = Number(values.sockets);
const subscribe = values.mode === "subscribe";

const window = { start: 0, end: 0, received: new Map(), latenciesMs: [] };

class Socket {
  constructor(index) {
    this.url = urls[index % urls.length];
    this.keyIndex = index % keys.length;
    this.pings = 0;
    this.closed = null;
    this.newestSeen = "";
    this.outOfOrder = 0;
  }

  open() {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(this.url);
      const timer = setTimeout(() => {
        socket.close();
        reject(new Error("timed out opening and subscribing"));
      }, TIMEOUT_MS);
      const steps = [{ method: "auth", params: { apiKey: keys[this.keyIndex] } }];
      if (subscribe) steps.push({ method: "matches.subscribe", params: { sports: ["football"] } });
      const next = () => {
        const step = steps.shift();
        if (step === undefined) {
          clearTimeout(timer);
          resolve();
          return;
        }
        socket.send(JSON.stringify({ jsonrpc: "2.0", id: step.method, ...step }));
      };
      socket.addEventListener("open", next);
      socket.addEventListener("message", (message) => {
        const received = Date.now() / 1000;
        const frame = JSON.parse(message.data);
        if (frame.id !== undefined) {
          if (frame.error) {
            clearTimeout(timer);
            reject(new Error(`${frame.id}: ${frame.error.code}`));
          } else next();
        } else if (frame.method === "ping") this.pings += 1;
        else if (frame.method === "matches.event") this.note(frame.params.match, received);
      });
      socket.addEventListener("close", (event) => {
        this.closed = [Date.now() / 1000, event.code];
        clearTimeout(timer);
        reject(new Error(`closed with ${event.code} while opening`));
      });
      socket.addEventListener("error", () => {});
    });
  }

  note(match, received) {
    if (match.updatedAt < this.newestSeen) this.outOfOrder += 1;
    if (match.updatedAt > this.newestSeen) this.newestSeen = match.updatedAt;
    const published = Date.parse(match.updatedAt) / 1000 + microseconds(match.updatedAt);
    if (published < window.start || published > window.end) return;
    const id = `${match.id}@${match.updatedAt}`;
    window.received.set(id, (window.received.get(id) ?? 0) + 1);
    window.latenciesMs.push((received - published) * 1000);
  }
}

// Date.parse keeps milliseconds only; the service's timestamps carry microseconds.
function microseconds(iso) {
  const fraction = /\.(\d+)/.exec(iso);
  return fraction ? (Number(fraction[1].padEnd(6, "0").slice(3, 6)) / 1e6) : 0;
}

function say(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, Math.max(0, seconds * 1000)));

const sockets = Array.from({ length: count }, (_, index) => new Socket(index));
const errors = new Map();
let ready = 0;
let nextToOpen = 0;
await Promise.all(
  Array.from({ length: CONNECTING }, async () => {
    while (nextToOpen < sockets.length) {
      const socket = sockets[nextToOpen++];
      try {
        await socket.open();
        ready += 1;
      } catch (error) {
        const text = String(error.message).slice(0, 200);
        errors.set(text, (errors.get(text) ?? 0) + 1);
      }
    }
  }),
);
say({ ready, failed: count - ready, errors: [...errors].slice(0, 3) });

const closedCount = () => sockets.filter((socket) => socket.closed !== null).length;

for await (const line of createInterface({ input: process.stdin })) {
  const [command, ...args] = line.split(" ");
  if (command === "measure") {
    const [start, end, grace] = args.map(Number);
    for (const socket of sockets) socket.outOfOrder = 0;
    Object.assign(window, { start, end, received: new Map(), latenciesMs: [] });
    await sleep(end + grace - Date.now() / 1000);
    say({
      received: Object.fromEntries(window.received),
      latencies_ms: window.latenciesMs,
      out_of_order: sockets.reduce((sum, socket) => sum + socket.outOfOrder, 0),
      closed: closedCount(),
    });
  } else if (command === "hold") {
    const pingsBefore = sockets.reduce((sum, socket) => sum + socket.pings, 0);
    await sleep(Number(args[0]));
    const pings = sockets.reduce((sum, socket) => sum + socket.pings, 0) - pingsBefore;
    say({ pings, closed: closedCount() });
  } else if (command === "closes") {
    await sleep(Number(args[0]));
    const closes = sockets.filter((socket) => socket.closed !== null).map((socket) => [socket.keyIndex, ...socket.closed]);
    say({ closes, open: sockets.length - closes.length });
  }
}
process.exit(0);
