import WebSocket from 'ws';

/**
 * A bare Engine.IO v4 / Socket.IO v5 client on one WebSocket, for tests that must behave like no real
 * client would: flood the server with frames, or stop reading altogether (`pause()` stops reading from the
 * TCP socket, so whatever the server sends piles up on its side).
 */
export class RawViewer {
  /** Socket.IO event frames received (`42/live,[...]`), as text. */
  readonly events: string[] = [];
  bytesReceived = 0;
  closed = false;

  private constructor(private readonly ws: WebSocket) {}

  static async connect(baseUrl: string, auth: Record<string, unknown>, timeoutMs = 5000): Promise<RawViewer> {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/socket.io/?EIO=4&transport=websocket`);
    const viewer = new RawViewer(ws);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('raw viewer: no snapshot in time')), timeoutMs);
      ws.on('message', (data: Buffer) => {
        const text = data.toString();
        viewer.bytesReceived += data.length;
        if (text.startsWith('0')) ws.send(`40/live,${JSON.stringify(auth)}`);
        else if (text === '2') ws.send('3');
        else if (text.startsWith('44/live')) reject(new Error(`raw viewer refused: ${text}`));
        else if (text.startsWith('42/live,')) {
          viewer.events.push(text);
          if (text.startsWith('42/live,["campaign.snapshot"')) {
            clearTimeout(timer);
            resolve();
          }
        }
      });
      ws.on('error', reject);
      ws.on('close', () => {
        viewer.closed = true;
        reject(new Error('raw viewer: closed before the snapshot'));
      });
    });
    return viewer;
  }

  /** Sends one Socket.IO event on /live. */
  emit(event: string, payload: unknown): void {
    this.ws.send(`42/live,${JSON.stringify([event, payload])}`);
  }

  /** Sends one raw Engine.IO frame (`42/live,[...]` is a Socket.IO event on /live). */
  send(frame: string): void {
    this.ws.send(frame);
  }

  /** Stops reading from the TCP socket: the server's writes pile up in its buffers. */
  pause(): void {
    (this.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  }

  close(): void {
    this.ws.terminate();
  }
}
