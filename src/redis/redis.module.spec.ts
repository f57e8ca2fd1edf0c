import { EventEmitter } from 'node:events';
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

  it('sends one PING at a time, and counts each interval one stays unanswered as a miss (a client without a command timeout waits for ever)', async () => {
    const client = fakeClient('ready', () => new Promise(() => undefined));
    const timer = RedisConnection.pingEvery(client as unknown as Redis, 100);
    try {
      // The first tick sends a PING; each later one finds it unanswered: a miss.
      jest.advanceTimersByTime(100 * REDIS_PROBES_BEFORE_RECONNECT);
      await settle();
      expect(client.ping).toHaveBeenCalledTimes(1);
      expect(client.disconnect).not.toHaveBeenCalled();
      jest.advanceTimersByTime(100);
      await settle();
      expect(client.ping).toHaveBeenCalledTimes(1);
      expect(client.disconnect).toHaveBeenCalledWith(true);
      // Reopened: the next tick asks again.
      jest.advanceTimersByTime(100);
      await settle();
      expect(client.ping).toHaveBeenCalledTimes(2);
    } finally {
      clearInterval(timer);
    }
  });

  it('a PING answered late, within its interval, is no miss', async () => {
    const client = fakeClient('ready', () => new Promise((resolve) => setTimeout(() => resolve('PONG'), 60)));
    const answered = jest.fn();
    const timer = RedisConnection.pingEvery(client as unknown as Redis, 100, answered);
    try {
      for (let i = 0; i < 10; i += 1) {
        jest.advanceTimersByTime(100);
        await settle();
      }
      expect(client.disconnect).not.toHaveBeenCalled();
      expect(answered.mock.calls.length).toBeGreaterThanOrEqual(4);
    } finally {
      clearInterval(timer);
    }
  });
});

describe('RedisConnection.limitHandshake', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** A client that emits ioredis's events, with its status. */
  function eventClient() {
    const client = Object.assign(new EventEmitter(), { status: 'connecting', disconnect: jest.fn() });
    const to = (status: string, event: string) => {
      client.status = status;
      client.emit(event);
    };
    return { client, to };
  }

  it('drops and reopens a connection whose handshake has not ended in time (TCP up, never ready)', () => {
    const { client, to } = eventClient();
    RedisConnection.limitHandshake(client as unknown as Redis, 1000);
    to('connect', 'connect');
    jest.advanceTimersByTime(999);
    expect(client.disconnect).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(client.disconnect).toHaveBeenCalledWith(true);
  });

  it('leaves a connection alone once it is ready, or closed; each new connection gets its own time', () => {
    const { client, to } = eventClient();
    RedisConnection.limitHandshake(client as unknown as Redis, 1000);
    to('connect', 'connect');
    jest.advanceTimersByTime(500);
    to('ready', 'ready');
    jest.advanceTimersByTime(5000);
    to('reconnecting', 'close');
    to('connect', 'connect');
    jest.advanceTimersByTime(500);
    to('reconnecting', 'close');
    jest.advanceTimersByTime(5000);
    expect(client.disconnect).not.toHaveBeenCalled();
    to('connect', 'connect');
    jest.advanceTimersByTime(1000);
    expect(client.disconnect).toHaveBeenCalledTimes(1);
  });
});
