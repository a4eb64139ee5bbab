#!/usr/bin/env node
// lockpick client program (workloads/PROTOCOL.md, version 1) over the `redis-semaphore` npm
// package (5.8.0: its Mutex, `SET mutex:<key> <uuid> PX <lockTimeout> NX`, released by a Lua
// compare-and-delete) on an ioredis 5 client, against the first server of LOCKPICK_SERVERS.
//
//     examples/node-redis-semaphore/install.sh /tmp/semaphore-client
//     lockpick run --lock 'exec:redis:/tmp/semaphore-client/lock_client.js'
//
// It hands out no fencing token. The lease is the key's PX: held for at least the TTL after the
// request was sent, gone at most the TTL after the answer. By default the Mutex's own
// background refresh (every 0.8 lockTimeout) is turned off (`refreshInterval: 0`): unseen, it
// would leave the lease with no known end (PROTOCOL.md, `expires_ms`), and lockpick's `extend`
// needs a refresh call the Mutex does not offer. So this program renews nothing: a critical
// section longer than the TTL loses its lease, as that Mutex without refresh would.
//
//     lockpick run --lock 'exec:redis:/tmp/semaphore-client/lock_client.js --refresh'
//
// With --refresh the Mutex refreshes as it does by default, and the program reports each
// refresh (`renewed`, PROTOCOL.md): the Mutex's `_refresh` (the compare-and-PEXPIRE its timer
// calls) is wrapped per Mutex. A refresh that throws is reported and then ends the refreshing,
// as a lost lock would (the Mutex would otherwise leave the rejection unhandled, which ends the
// process), and `release` waits for a refresh in flight, so its report comes before the answer.
//
// ioredis pitfalls, set against here: by default it queues commands while disconnected and
// re-sends them on reconnection, and retries a request up to 20 times, either of which applies
// a SET long after the acquire was answered. `enableOfflineQueue: false`,
// `maxRetriesPerRequest: 0` and `autoResendUnfulfilledCommands: false` make every request one
// attempt, bounded by `commandTimeout`.
'use strict';

const readline = require('readline');
const Redis = require('ioredis');
const { Mutex } = require('redis-semaphore');

const TTL_MS = Number(process.env.LOCKPICK_TTL_MS);
const OP_TIMEOUT_MS = Number(process.env.LOCKPICK_OP_TIMEOUT_MS || '500');
const KEY = process.env.LOCKPICK_KEY;
const RETRY_MS = 10;
const REFRESH = process.argv.slice(2).includes('--refresh');

const log = (...words) => console.error('node-redis-semaphore:', ...words);

const server = process.env.LOCKPICK_SERVERS.split(',')[0];
const at = server.lastIndexOf(':');
const client = new Redis({
  host: server.slice(0, at),
  port: Number(server.slice(at + 1)),
  commandTimeout: Math.floor(OP_TIMEOUT_MS * 0.8),
  connectTimeout: Math.floor(OP_TIMEOUT_MS * 0.8),
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  retryStrategy: () => 100,
});
client.on('error', (e) => log(e.message));

let mutex = null;
// The refresh in flight, if any: `release` waits for it.
let refreshing = Promise.resolve();

const say = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

// An error after which the command may still have been applied: anything but one that was
// never sent (not connected, offline queue off) or a server's refusal.
function outcomeOf(e) {
  const unsent = /enableOfflineQueue|Connection is closed|Stream isn't writeable/.test(e.message);
  if (unsent || e.name === 'ReplyError') return { result: 'fail', error: e.message };
  return { result: 'unknown', error: `${e.name}: ${e.message}` };
}

// A refresh's report counts from after its reply; Redis keeps a key up to 1 ms past its expiry.
const LEASE = { valid_ms: TTL_MS, expires_ms: REFRESH ? TTL_MS + 2 : TTL_MS };

// Each refresh the Mutex's timer makes is reported once its outcome is known.
function reportRefreshes(candidate) {
  const refresh = candidate._refresh.bind(candidate);
  candidate._refresh = () => {
    refreshing = (async () => {
      try {
        const refreshed = await refresh();
        say(refreshed
          ? { renewed: 'ok', expires_ms: LEASE.expires_ms }
          : { renewed: 'fail', error: 'no longer ours' });
        return refreshed;
      } catch (e) {
        const outcome = outcomeOf(e);
        say({ renewed: outcome.result, error: outcome.error });
        return false;
      }
    })();
    return refreshing;
  };
}

// One attempt per Mutex (a fresh uuid), RETRY_MS apart, so that the answer can say when the
// attempt that succeeded was sent.
async function acquire(waitMs) {
  const received = Date.now();
  for (;;) {
    const attempt = Date.now();
    const candidate = new Mutex(client, KEY, {
      lockTimeout: TTL_MS,
      acquireTimeout: OP_TIMEOUT_MS,
      acquireAttemptsLimit: 1,
      retryInterval: RETRY_MS,
      refreshInterval: REFRESH ? Math.round(TTL_MS * 0.8) : 0,
      onLockLost: () => {},
    });
    if (REFRESH) reportRefreshes(candidate);
    if (await candidate.tryAcquire()) {
      mutex = candidate;
      return { result: 'ok', granted_after_ms: attempt - received, ...LEASE };
    }
    if (attempt + RETRY_MS > received + waitMs) {
      return { result: 'fail', error: 'held by another client' };
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

async function handle(request) {
  try {
    if (request.op === 'acquire') return await acquire(request.wait_ms);
    if (request.op === 'release') {
      // The Mutex ignores the script's answer: a release of a key no longer ours is not told
      // apart from one that deleted it.
      mutex.stopRefresh();
      await refreshing;
      await mutex.release();
      return { result: 'ok' };
    }
    return { result: 'fail', error: `unknown op ${request.op}` };
  } catch (e) {
    const answer = outcomeOf(e);
    // Not sent, or refused by the server: nothing was said of whose the key is.
    if (request.op === 'release' && answer.result === 'fail') answer.kind = 'refused';
    return answer;
  }
}

function start() {
  const version = require('redis-semaphore/package.json').version;
  const ioredis = require('ioredis/package.json').version;
  const library = `redis-semaphore ${version}, ioredis ${ioredis}`;
  say(REFRESH
    ? { protocol: 1, library: `${library}, refresh`, reports_renewals: true }
    : { protocol: 1, library });
  const lines = readline.createInterface({ input: process.stdin });
  // One request at a time, in order: lockpick sends the next only after this one's answer.
  let queue = Promise.resolve();
  lines.on('line', (line) => {
    const request = JSON.parse(line);
    queue = queue.then(async () => {
      const answer = await handle(request);
      say({ id: request.id, ...answer });
    });
  });
  lines.on('close', () => queue.then(() => process.exit(0)));
}

// The hello only once connected, so that the first acquire is not refused unsent.
client.once('ready', start);
