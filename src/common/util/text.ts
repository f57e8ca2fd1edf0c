/**
 * `text` without the run of `char` at its end (`withoutTrailing('https://a.example//', '/')` is
 * `https://a.example`): what `text.replace(/x+$/, '')` gives, in one pass from the end (that regular
 * expression is tried again at every position of a long run that is not at the end, which takes
 * quadratic time).
 */
export function withoutTrailing(text: string, char: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === char) end -= 1;
  return end === text.length ? text : text.slice(0, end);
}
