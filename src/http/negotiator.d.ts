/** The part of the `negotiator` package (no published types) that compression.ts uses. */
declare module 'negotiator' {
  class Negotiator {
    constructor(request: { headers: Record<string, string | string[] | undefined> });
    /** The best of `available` for the request's Accept-Encoding; ties go to the first of `preferred`. */
    encoding(available?: string[], options?: { preferred?: string[] }): string | undefined;
  }
  export = Negotiator;
}
