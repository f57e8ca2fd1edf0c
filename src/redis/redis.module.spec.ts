import type Redis from 'ioredis';
import { REDIS_PROBES_BEFORE_RECONNECT, RedisConnection } from './redis.module';

/** A client whose PING answers as `answer` says, with the status ioredis would give it. */
function fakeClient(status: string, answer: () => Promise<unknown>) {
  return { status, ping: jest.fn(answer), disconnect: jest.fn(), once: jest.fn() };
}

/** Lets the PING of the last tick settle (its then/finally). */
const settle = async () => {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
};

describe('RedisConnection.pingEvery', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('drops and reopens an open connection that answers no PING REDIS_PROBES_BEFORE_RECONNECT times in a row', async () => {
    const client = fakeClient('ready', () => Promise.reject(new Error('Command timed out')));
    const timer = RedisConnection.pingEvery(client as unknown as Redis, 100);
    try {
      for (let i = 1; i < REDIS_PROBES_BEFORE_RECONNECT; i += 1) {
        jest.advanceTimersByTime(100);
        await settle();
      }
      expect(client.disconnect).not.toHaveBeenCalled();
      jest.advanceTimersByTime(100);
      await settle();
      expect(client.disconnect).toHaveBeenCalledWith(true);
    } finally {
      clearInterval(timer);
    }
  });

  it('leaves a connection that ioredis is (re)connecting to ioredis, and calls back when a PING answers', async () => {
    let up = false;
    const client = fakeClient('reconnecting', () => (up ? Promise.resolve('PONG') : Promise.reject(new Error('Connection is closed.'))));
    const answered = jest.fn();
    const timer = RedisConnection.pingEvery(client as unknown as Redis, 100, answered);
    try {
      for (let i = 0; i < REDIS_PROBES_BEFORE_RECONNECT * 3; i += 1) {
        jest.advanceTimersByTime(100);
        await settle();
      }
      expect(client.disconnect).not.toHaveBeenCalled();
      expect(answered).not.toHaveBeenCalled();
      up = true;
      client.status = 'ready';
      jest.advanceTimersByTime(100);
      await settle();
      expect(answered).toHaveBeenCalledTimes(1);
    } finally {
      clearInterval(timer);
    }
  });

  it('sends one PING at a time: a tick while one is unanswered sends none', async () => {
    const client = fakeClient('ready', () => new Promise(() => undefined));
    const timer = RedisConnection.pingEvery(client as unknown as Redis, 100);
    try {
      jest.advanceTimersByTime(500);
      await settle();
      expect(client.ping).toHaveBeenCalledTimes(1);
    } finally {
      clearInterval(timer);
    }
  });
});
