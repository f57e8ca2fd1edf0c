/** Why an image could not be stored; the message is shown to the caller (sync row message, logs). */
export class MediaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MediaError';
  }
}
