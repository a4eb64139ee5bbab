#!/usr/bin/env node
// lockpick client program (workloads/PROTOCOL.md, version 1) over the `advisory-lock` npm
// package (2.0.0: `pg_try_advisory_lock` on a connection of its own per attempt, released by
// `pg_advisory_unlock` on the same connection, which it then closes) on node-postgres 8, against
// the PostgreSQL server of LOCKPICK_SERVERS, logged in as the connection facts of
// `exec:postgres-advisory` say (PROTOCOL.md's table: user and database `postgres`, no password).
//
//     examples/node-advisory-lock/install.sh /tmp/advisory-client
//     lockpick run --lock 'exec:postgres-advisory:/tmp/advisory-client/lock_client.js'
//
// It hands out no fencing token, and its lease is its session: held while the connection lives,
// with no known end (the answers promise nothing beyond the request). advisory-lock takes only a
// connection string, so a request's read is bounded by node-postgres's `query_timeout` (given in
// the string), but its connect is not: a request whose server does not answer is answered
// `unknown` here at the bound, and the library's connection lingers until the server answers or
// the program ends.
'use strict';

const readline = require('readline');
const advisoryLock = require('advisory-lock').default;

const OP_TIMEOUT_MS = Number(process.env.LOCKPICK_OP_TIMEOUT_MS || '500');
const KEY = process.env.LOCKPICK_KEY;
const RETRY_MS = 10;
const BOUND_MS = Math.floor(OP_TIMEOUT_MS * 0.8);

const server = process.env.LOCKPICK_SERVERS.split(',')[0];
const mutex = advisoryLock(`postgres://postgres@${server}/postgres?query_timeout=${BOUND_MS}`)(KEY);
let unlock = null;

const say = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

// The library's promise, or `unknown` once the bound has passed (it may still be applied).
function bounded(promise) {
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ late: true }), BOUND_MS);
  });
  return Promise.race([promise.then((value) => ({ value })), late]).finally(() => clearTimeout(timer));
}

// One attempt per RETRY_MS, so that the answer can say when the one that succeeded was sent.
async function acquire(waitMs) {
  const received = Date.now();
  for (;;) {
    const attempt = Date.now();
    const tried = await bounded(mutex.tryLock());
    if (tried.late) return { result: 'unknown', error: 'no answer within the bound' };
    if (tried.value) {
      unlock = tried.value;
      return { result: 'ok', granted_after_ms: attempt - received };
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
      if (!unlock) return { result: 'fail', kind: 'not-held', error: 'nothing held' };
      const release = unlock;
      unlock = null;
      const done = await bounded(release());
      if (done.late) return { result: 'unknown', error: 'no answer within the bound' };
      return { result: 'ok' };
    }
    return { result: 'fail', error: `unknown op ${request.op}` };
  } catch (e) {
    return { result: 'unknown', error: `${e.name}: ${e.message}` };
  }
}

const version = require('advisory-lock/package.json').version;
const pg = require('pg/package.json').version;
say({ protocol: 1, library: `advisory-lock ${version}, pg ${pg}` });
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
