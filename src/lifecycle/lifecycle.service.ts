import type { Server } from 'node:http';
import { Server as NetServer, Socket } from 'node:net';
import { Injectable, Logger } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Namespace } from 'socket.io';
import { AppConfig } from '../config/app-config';
import { foreground } from '../common/util/foreground';
import { finishedWithin } from '../common/util/finished-within';
import { startExitWatchdog } from './exit-watchdog';

const POLL_MS = 50;
/** Quiet time (no request started) before the remaining keep-alive connections are closed. */
const SETTLE_MS = 300;
/** How long a new connection may stay without a request before shutdown stops waiting for it. */
const FIRST_REQUEST_MS = 5000;
/**
 * Before the listener closes: connections the kernel has completed wait in its listen backlog until the
 * process takes them (later, when the event loop was busy), and closing the listener would reset them.
 * The listener closes after a full turn of the event loop took in no new connection (its poll phase
 * accepts everything waiting), at most ACCEPT_MAX_MS after the signal.
 */
const ACCEPT_MAX_MS = 2000;
/**
 * Longest the last step (closing Socket.IO, Redis and the database) may take. Every request has been
 * answered by then; a connection that does not answer (mysql2's pool waits for each connection's QUIT,
 * and a connection abandoned meanwhile never answers it) must not keep the process from exiting.
 */
export const CLOSE_MAX_MS = 10_000;

/** What the exit watchdog allows beyond SHUTDOWN_TIMEOUT and CLOSE_MAX_MS (see startExitWatchdog). */
const WATCHDOG_MARGIN_MS = 5_000;

/**
 * The node's life after start: which requests are in flight, and the orderly shutdown on SIGTERM/SIGINT.
 *
 * Shutdown, in order, each step logged: readiness answers 503 at once (load balancers stop sending);
 * the listener closes (no new connections) and idle keep-alive connections are closed; viewers are told
 * to reconnect (their transport is closed, so Socket.IO clients reconnect, to another node behind a load
 * balancer); requests already accepted run to their end, for at most SHUTDOWN_TIMEOUT, each answered with
 * `Connection: close`; then the app closes (Socket.IO, Redis, the database) and the process exits 0.
 */
@Injectable()
export class Lifecycle {
  private readonly logger = new Logger('Shutdown');
  private lastStart = 0;
  private connections = 0;
  private draining = false;
  private namespace: Namespace | null = null;
  private lingering: () => number = () => 0;
  /** Connections accepted that have not sent a request yet (their first one may still be on its way). */
  private readonly fresh = new Map<Socket, number>();
  /** Connections that have sent requests: how many are in flight on each (0 = an idle keep-alive connection). */
  private readonly served = new Map<Socket, number>();
  /**
   * Responses of the requests in flight (their count is the requests in flight): those not begun when the
   * drain starts are told to say `Connection: close`.
   */
  private readonly answering = new Set<Response>();

  constructor(private readonly config: AppConfig) {}

  /** True once shutdown has begun: readiness is 503 from then on. */
  get isDraining(): boolean {
    return this.draining;
  }

  get requestsInFlight(): number {
    return this.answering.size;
  }

  /** The viewer channel's namespace, to tell its viewers to reconnect on shutdown. */
  attachLive(namespace: Namespace): void {
    this.namespace = namespace;
  }

  /**
   * Follows the server's connections from their start (see `fresh`); `lingering` counts the connections
   * still reading the rest of a body whose answer has been sent (ConnectionGuard): they are let finish
   * before the last connections are closed, since closing one then would be a reset.
   */
  watch(server: Server, lingering: () => number = () => 0): void {
    this.lingering = lingering;
    server.on('connection', (socket: Socket) => {
      this.connections += 1;
      this.fresh.set(socket, Date.now());
      socket.once('close', () => {
        this.fresh.delete(socket);
        this.served.delete(socket);
      });
    });
  }

  /**
   * Express middleware: counts the requests in flight (and enters each as interactive, see
   * ForegroundRequests); while draining, each answer closes its connection.
   */
  readonly track = (req: Request, res: Response, next: NextFunction): void => {
    const socket = req.socket;
    this.fresh.delete(socket);
    this.served.set(socket, (this.served.get(socket) ?? 0) + 1);
    this.lastStart = Date.now();
    // Interactive until its route says it is bulk work (BulkWorkGuard) or it is answered.
    foreground.enter(req);
    let done = false;
    this.answering.add(res);
    const finish = () => {
      if (done) return;
      done = true;
      this.answering.delete(res);
      foreground.leave(req);
      const onSocket = this.served.get(socket);
      if (onSocket !== undefined) this.served.set(socket, onSocket - 1);
    };
    res.once('finish', finish);
    res.once('close', finish);
    if (this.draining) res.setHeader('Connection', 'close');
    next();
  };

  /**
   * No request in flight, none started for SETTLE_MS, no new connection still to send its first request
   * (for up to FIRST_REQUEST_MS), no answered body still being read (for up to UNREAD_BODY_LINGER_MS), and
   * none waiting to be read: the check runs again after the event
   * loop's poll phase (setImmediate), which reads and parses what has arrived meanwhile.
   */
  private async quiet(): Promise<boolean> {
    const idle = () => {
      const now = Date.now();
      if (this.requestsInFlight > 0 || now - this.lastStart < SETTLE_MS || this.lingering() > 0) return false;
      for (const since of this.fresh.values()) if (now - since < FIRST_REQUEST_MS) return false;
      return true;
    };
    if (!idle()) return false;
    await new Promise((resolve) => setImmediate(resolve));
    return idle();
  }

  /** Runs the shutdown; resolves when the app is closed (the caller exits). */
  async shutdown(app: INestApplication, signal: string): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    // Past every deadline below, and a margin, the process is killed whatever holds its event loop.
    const watchdog = startExitWatchdog(this.config.server.shutdownTimeoutMs + CLOSE_MAX_MS + WATCHDOG_MARGIN_MS, this.config.server.logFormat);
    try {
      await this.drainAndClose(app, signal);
    } finally {
      // Done: the caller exits now (a test's app closed in its own process lives on).
      await watchdog.terminate();
    }
  }

  private async drainAndClose(app: INestApplication, signal: string): Promise<void> {
    // Requests already running when the drain starts are answered `Connection: close` too (where the answer
    // has not begun): said keep-alive, their connection would be closed once idle, and the client's next
    // request on it, sent meanwhile, would meet a reset.
    for (const res of this.answering) if (!res.headersSent) res.setHeader('Connection', 'close');
    const started = Date.now();
    const server = app.getHttpServer() as Server;
    this.logger.log(`${signal} received: readiness is 503 from now on; closing the listener`);
    // Take in the connections the kernel has already completed first (see ACCEPT_MAX_MS).
    for (let before = -1; before !== this.connections && Date.now() < started + ACCEPT_MAX_MS;) {
      before = this.connections;
      await new Promise((resolve) => setTimeout(resolve, 1)); // the next turn's timers...
      await new Promise((resolve) => setImmediate(resolve)); // ...and its poll phase (accepts) are behind us
    }
    // Stop listening, but leave the open connections alone: http.Server#close would also close the
    // "idle" ones, and a connection whose request still waits unread in its socket (the event loop was
    // busy) counts as idle, so its request would be reset. They are closed once the node is quiet.
    NetServer.prototype.close.call(server);
    // Keep-alive connections idle right now would only invite new requests: close them (those with a
    // request in flight are closed after its answer, which says `Connection: close`).
    let idle = 0;
    for (const [socket, busy] of this.served) {
      if (busy > 0) continue;
      socket.end();
      idle += 1;
    }
    if (idle) this.logger.log(`closed ${idle} idle keep-alive connection(s)`);

    const viewers = this.namespace?.sockets.size ?? 0;
    if (viewers) {
      // Closing the transport (not a server-side disconnect) makes Socket.IO clients reconnect by themselves.
      for (const socket of this.namespace?.sockets.values() ?? []) socket.conn.close();
      this.logger.log(`told ${viewers} viewer connection(s) to reconnect`);
    }

    const deadline = started + this.config.server.shutdownTimeoutMs;
    if (this.requestsInFlight > 0)
      this.logger.log(`waiting for ${this.requestsInFlight} request(s) in flight (at most ${this.config.server.shutdownTimeoutMs} ms)`);
    while (Date.now() < deadline && !(await this.quiet())) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    if (this.requestsInFlight > 0)
      this.logger.warn(`${this.requestsInFlight} request(s) still running after ${this.config.server.shutdownTimeoutMs} ms; closing anyway`);
    else this.logger.log(`all requests finished (${Date.now() - started} ms)`);
    server.closeAllConnections();

    this.logger.log('closing the live channel, Redis and the database');
    if (!(await finishedWithin(app.close(), CLOSE_MAX_MS)))
      this.logger.warn(`the live channel, Redis or the database did not close within ${CLOSE_MAX_MS} ms; exiting anyway`);
    this.logger.log(`shutdown complete (${Date.now() - started} ms)`);
  }
}
