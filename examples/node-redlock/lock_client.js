#!/usr/bin/env node
// lockpick client program (workloads/PROTOCOL.md, version 1) over the `redlock` npm package
// (4.2.0, the Redlock algorithm over N independent Redis servers) with node_redis 3 clients,
// one per server of LOCKPICK_SERVERS.
//
//     examples/node-redlock/install.sh /tmp/redlock-client
//     lockpick run --lock 'exec:redlock:/tmp/redlock-client/lock_client.js'
//
// Redlock hands out no fencing token. A grant is valid, by Redlock's own reckoning, until the
// lock's `expiration` (the attempt's start + TTL - clock drift); every server's key ends at most
// TTL after the answer (Redlock waits for every server's reply), unless extended. It answers
// `clock` with Date.now(), the clock redlock reckons its leases by, so that `skew-clients` can
// see it moved.
'use strict';

const readline = require('readline');
const redis = require('redis');
const Redlock = require('redlock');

const TTL_MS = Number(process.env.LOCKPICK_TTL_MS);
const OP_TIMEOUT_MS = Number(process.env.LOCKPICK_OP_TIMEOUT_MS || '500');
const KEY = process.env.LOCKPICK_KEY;
// Redlock's retry pace: an attempt every RETRY_DELAY_MS +- RETRY_JITTER_MS.
const RETRY_DELAY_MS = 50;
const RETRY_JITTER_MS = 10;

const log = (...words) => console.error('node-redlock:', ...words);

const SERVERS = process.env.LOCKPICK_SERVERS.split(',');
const clients = SERVERS.map((server) => {
  const at = server.lastIndexOf(':');
  const client = redis.createClient({
    host: server.slice(0, at),
    port: Number(server.slice(at + 1)),
    // A command to a server we are not connected to fails at once, unsent, instead of
    // waiting in a queue to be applied at some later reconnection.
    enable_offline_queue: false,
    retry_strategy: () => 100,
  });
  client.on('error', (e) => log(`${server}: ${e.message}`));
  return client;
});

// retryCount 0 here: each acquire sets its own, from its wait; extend tries once.
const redlock = new Redlock(clients, {
  retryCount: 0,
  retryDelay: RETRY_DELAY_MS,
  retryJitter: RETRY_JITTER_MS,
});

// Which servers said what to each lock value's scripts. Redlock 4.2 counts the servers' votes
// but does not say whose they were, so each reply is watched on its way through
// `_executeScript`, the one method every script of redlock 4 goes through (an internal, but
// the same through 4.x). For a value: `granted`, the servers that set the key in its latest
// attempt (every attempt asks the servers in order, the first one first); `released` and
// `notOurs`, the servers whose unlock deleted the key, or found it gone or another's.
const ADDRESS = new Map(clients.map((client, i) => [client, SERVERS[i]]));
const replies = new Map();
const executeScript = redlock._executeScript.bind(redlock);
redlock._executeScript = function watched(server, name, args, callback) {
  const wanted = args[0]; // the number of keys: the reply of a script that took every one
  const value = args[args.length - (name === 'unlockScript' ? 1 : 2)];
  if (!replies.has(value)) replies.set(value, { granted: [], released: [], notOurs: [] });
  const said = replies.get(value);
  if (name === 'lockScript' && server === clients[0]) said.granted = [];
  if (name === 'unlockScript' && server === clients[0]) {
    said.released = [];
    said.notOurs = [];
  }
  return executeScript(server, name, args, (err, response) => {
    const all = !err && (response === wanted || response === `${wanted}`);
    if (name === 'lockScript' && all) said.granted.push(ADDRESS.get(server));
    if (name === 'unlockScript' && all) said.released.push(ADDRESS.get(server));
    if (name === 'unlockScript' && !err && !all) said.notOurs.push(ADDRESS.get(server));
    callback(err, response);
  });
};

// Why a release failed: `not-ours` when too few servers may still hold the key for it to be
// ours (Redlock's lock lives only on a majority); `refused` when enough of them refused the
// unlock or were not reached that it may be.
function releaseFailKind(lock) {
  const said = replies.get(lock.value) || { released: [], notOurs: [] };
  const mayHold = SERVERS.length - said.released.length - said.notOurs.length;
  return mayHold < Math.floor(SERVERS.length / 2) + 1 ? 'not-ours' : 'refused';
}

// The servers' errors during the current request: Redlock counts a failed server as a
// missing vote and only reports them as events.
let serverErrors = [];
redlock.on('clientError', (e) => serverErrors.push(e));

// An error after which the command may still have been applied: anything but a command that
// was never sent (NR_CLOSED: not connected) or a server's refusal (ReplyError).
function mayHaveApplied(e) {
  return !(e.code === 'NR_CLOSED' || e.name === 'ReplyError');
}

function failOrUnknown(e) {
  const uncertain = serverErrors.filter(mayHaveApplied);
  if (uncertain.length > 0) {
    const first = uncertain[0];
    return { result: 'unknown', error: `${e.message} (${first.code || first.name}: ${first.message})` };
  }
  return { result: 'fail', error: e.message };
}

// Resolves to `answer(value)` or `late(...)`: Redlock has no bound of its own on a server that
// never replies (a paused or cut-off server), so a request past its bound is `unknown`.
function bounded(promise, ms, what) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ timedOut: true }), ms);
    promise.then(
      (value) => { clearTimeout(timer); resolve({ value }); },
      (error) => { clearTimeout(timer); resolve({ error }); },
    );
  }).then((outcome) => {
    if (outcome.timedOut) log(`${what} not answered within ${ms} ms`);
    return outcome;
  });
}

let held = null;

function lease(lock, received) {
  return { valid_ms: Math.max(0, Math.floor(lock.expiration - received)), expires_ms: TTL_MS };
}

// A grant, dated from the attempt that took the lock (sent `granted_after_ms` after the
// request was received; `valid_ms` then counts from there): redlock 4.2 dates a lock's
// expiration from the start of its successful attempt, start + ttl - drift, with drift =
// round(driftFactor * ttl) + 2 (driftFactor 0.01 by default).
function grant(lock, received) {
  const drift = Math.round(0.01 * TTL_MS) + 2;
  const attempt = lock.expiration - TTL_MS + drift;
  const grantedAfter = Math.max(0, Math.floor(attempt - received));
  return {
    valid_ms: Math.max(0, Math.floor(lock.expiration - (received + grantedAfter))),
    expires_ms: TTL_MS,
    granted_after_ms: grantedAfter,
  };
}

async function handle(request, received) {
  serverErrors = [];
  if (request.op === 'acquire') {
    if (held) return { result: 'fail', error: 'already holding the lock' };
    replies.clear(); // what the servers said to earlier grants' values is no longer asked
    const retryCount = Math.floor(request.wait_ms / (RETRY_DELAY_MS + RETRY_JITTER_MS));
    const taking = redlock.lockWithOptions(KEY, TTL_MS, { retryCount });
    const outcome = await bounded(taking, request.wait_ms + OP_TIMEOUT_MS * 0.8, 'acquire');
    if (outcome.timedOut) {
      // Should it still succeed, give it back: lockpick counts this acquire as maybe held.
      taking.then((late) => late.unlock()).catch(() => {});
      return { result: 'unknown', error: 'timed out waiting for the servers' };
    }
    if (outcome.error) return failOrUnknown(outcome.error);
    held = outcome.value;
    const grantedBy = replies.get(held.value).granted;
    return { result: 'ok', ...grant(held, received), granted_by: grantedBy };
  }
  if (request.op === 'release' || request.op === 'extend') {
    if (!held) {
      return request.op === 'release'
        ? { result: 'fail', kind: 'not-held', error: 'no lock held' }
        : { result: 'fail', error: 'no lock held' };
    }
    const lock = held;
    const releasing = request.op === 'release';
    const asking = releasing ? lock.unlock() : lock.extend(TTL_MS);
    const outcome = await bounded(asking, OP_TIMEOUT_MS * 0.8, request.op);
    if (releasing) held = null;
    if (outcome.timedOut) {
      return { result: 'unknown', error: 'timed out waiting for the servers' };
    }
    if (outcome.error) {
      held = null; // a failed extend has unlocked what it reached: the lock is gone
      const answer = failOrUnknown(outcome.error);
      if (releasing && answer.result === 'fail') answer.kind = releaseFailKind(lock);
      return answer;
    }
    return releasing ? { result: 'ok' } : { result: 'ok', ...lease(lock, received) };
  }
  if (request.op === 'clock') return { result: 'ok', wall_ms: Date.now() };
  return { result: 'fail', error: `unknown op ${request.op}` };
}

function say(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

async function serve() {
  // Give the connections a moment, so that the first acquire does not find them all unready;
  // a server that is down stays down for Redlock to count as a missing vote.
  await Promise.race([
    Promise.all(clients.map((c) => new Promise((ready) => c.once('ready', ready)))),
    new Promise((later) => setTimeout(later, 2000)),
  ]);
  const library = `redlock ${require('redlock/package.json').version}, `
    + `node_redis ${require('redis/package.json').version}`;
  say({ protocol: 1, library, extend: true, clock: true });
  const lines = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    const received = Date.now();
    const request = JSON.parse(line);
    say({ id: request.id, ...(await handle(request, received)) });
  }
  // stdin closed: give back what we hold, then go.
  if (held) await bounded(held.unlock(), OP_TIMEOUT_MS, 'release at exit');
  clients.forEach((c) => c.end(true));
  process.exit(0);
}

serve().catch((e) => {
  log(e.stack || String(e));
  process.exit(1);
});
