/** A DNS label: letters, digits, `-` and `_`, at most 63 characters, neither starting nor ending with `-`. */
const LABEL = '[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?';

/** A host name as a pattern to build on: labels joined by dots (an IPv4 address is one too), maybe a final dot. */
export const HOST_NAME_PATTERN = `${LABEL}(?:\\.${LABEL})*\\.?`;

/** A DNS host name of at most 253 characters (a final dot aside), or an IPv4 address. */
export const HOST_NAME = new RegExp(`^(?=.{1,253}\\.?$)${HOST_NAME_PATTERN}$`, 'i');
