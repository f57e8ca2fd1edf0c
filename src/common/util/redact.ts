/**
 * `scheme://` (or a scheme-relative `//`) followed by user information up to its last `@` before the
 * path, query, fragment or a blank: the `user:password@` part of a URL. Greedy on purpose: with several
 * `@` (`http://u:p@ss@host`, which URL parsers read as user `u`, password `p@ss`) all of it goes.
 */
const USERINFO = /((?:\b[a-z][a-z0-9+.-]*:)?\/\/)[^/?#\s]*@/gi;

/**
 * Hides the credentials of every URL in a text before it is logged: `https://user:secret@cdn.example/a`
 * becomes `https://***@cdn.example/a`. The one helper for log lines that may print a URL (media URLs,
 * redirect locations, request URLs, settings such as REDIS_URL, driver messages).
 */
export function redactCredentials(text: string): string {
  return text.replace(USERINFO, '$1***@');
}
