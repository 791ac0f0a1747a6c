/**
 * A connection terminated at the moment the pool hands it over (found by `syncrelay chaos`: a
 * worker exited on an unhandled 'error' event while pg_terminate_backend hit its connections).
 * The server's "ready" and its "terminating connection" can arrive in one read: the driver hands
 * the client over on the first message and emits the error of the second in the same turn, before
 * any promise continuation runs. A fake server sends exactly that, so the window is hit every time.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PgDb } from '../../src/db/pg.js';

function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

/** AuthenticationOk, ReadyForQuery and a FATAL 57P01 ErrorResponse, in one write. */
function readyThenTerminated(): Buffer {
  const fields = Buffer.concat([
    Buffer.from('SFATAL\0', 'latin1'),
    Buffer.from('C57P01\0', 'latin1'),
    Buffer.from('Mterminating connection due to administrator command\0', 'latin1'),
    Buffer.from([0]),
  ]);
  return Buffer.concat([message('R', int32(0)), message('Z', Buffer.from('I', 'latin1')), message('E', fields)]);
}

/** Answers every startup message with readyThenTerminated() and closes the connection. */
function fakeServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket: Socket) => {
    let buffered = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 4 || buffered.length < buffered.readInt32BE(0)) return;
      socket.end(readyThenTerminated());
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port })),
  );
}

let server: Server | undefined;
let db: PgDb | undefined;
afterEach(async () => {
  await db?.close();
  await new Promise((r) => server?.close(r));
  db = undefined;
  server = undefined;
});

describe('PgDb: a connection terminated as the pool hands it over', () => {
  it('fails the transaction; no unhandled error event ends the process', async () => {
    const fake = await fakeServer();
    server = fake.server;
    db = new PgDb({ connectionString: `postgres://syncrelay@127.0.0.1:${fake.port}/none`, max: 2 });
    const unhandled: unknown[] = [];
    const onUncaught = (err: unknown) => unhandled.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      for (let i = 0; i < 3; i++) {
        await expect(db.transaction((tx) => tx.query('SELECT 1'))).rejects.toThrow();
      }
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(unhandled).toEqual([]);
  });
});
