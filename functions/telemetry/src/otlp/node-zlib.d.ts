/**
 * The part of node:zlib (workerd's nodejs_compat) the OTLP receiver uses. The workers' type
 * set is @cloudflare/workers-types, which has no node: modules, and @types/node would bring
 * Node globals (Buffer, process) into worker code.
 */
declare module 'node:zlib' {
  interface InflateOptions {
    /** Inflation stops with a RangeError once the output would pass this many bytes. */
    maxOutputLength?: number
  }
  export function gunzipSync(data: Uint8Array, options?: InflateOptions): Uint8Array
  export function inflateSync(data: Uint8Array, options?: InflateOptions): Uint8Array
}
