'use strict';
/**
 * The fairness probe's clients (bench/support.ts measureFairness): another customer reading its first list
 * page over and over, a 10 ms pause between two requests, each request's latency kept in ms.
 *
 * Run as a worker thread (the default), the clients have an event loop of their own, as another
 * customer's client is another program: the bench's own work (JSON.stringify of a 10,000-element body,
 * parsing the answer) then cannot hold their responses unread and count that time as the server's.
 * Messages: the worker posts { ready } after its warm-up, takes 'go' and then 'stop', and posts
 * { latencies } (or { error }).
 */
const { isMainThread, parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const { setTimeout } = require('node:timers');
const { fetch } = globalThis;

async function getPage(url, auth) {
  const res = await fetch(url, { headers: { authorization: auth } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`the other customer's list answered HTTP ${res.status}`);
}

/**
 * Starts `connections` clients after three warm-up requests (token cache, list cache); they wait for
 * `go()`, and `stop()` ends them and resolves to the latencies.
 */
async function startClients(url, auth, connections) {
  for (let i = 0; i < 3; i++) await getPage(url, auth);
  let go = () => {};
  const started = new Promise((resolve) => (go = resolve));
  let running = true;
  const latencies = [];
  const client = async () => {
    await started;
    while (running) {
      const t0 = performance.now();
      await getPage(url, auth);
      latencies.push(performance.now() - t0);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const clients = Promise.all(Array.from({ length: connections }, client));
  return {
    go,
    async stop() {
      running = false;
      go();
      await clients;
      return latencies;
    },
  };
}

if (!isMainThread && workerData && workerData.fairnessProbe) {
  const { url, auth, connections } = workerData;
  startClients(url, auth, connections).then(
    (probe) => {
      parentPort.on('message', (message) => {
        if (message === 'go') probe.go();
        else
          probe.stop().then(
            (latencies) => parentPort.postMessage({ latencies }),
            (err) => parentPort.postMessage({ error: String((err && err.stack) || err) }),
          );
      });
      parentPort.postMessage({ ready: true });
    },
    (err) => parentPort.postMessage({ error: String((err && err.stack) || err) }),
  );
}

module.exports = { startClients };
