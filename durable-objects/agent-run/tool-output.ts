/** How tool outputs reach the model (as text) and the events (as sent), both bounded. */

/** Tool output is cut to this many characters for the model and in events. */
export const MAX_TOOL_OUTPUT_CHARS = 100_000

/** `text`, cut at `limit` characters with a note of how much was cut. */
export function cut(text: string, limit = MAX_TOOL_OUTPUT_CHARS): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}… (${text.length - limit} more characters cut)`
}

/** An output as the model reads it: strings as they are, anything else as JSON. */
export function outputText(output: unknown): string {
  return cut(typeof output === 'string' ? output : JSON.stringify(output))
}

/** An output as it goes into an event: as sent, unless it is too big to store. */
export function eventOutput(output: unknown): unknown {
  const text = JSON.stringify(output)
  return text.length <= MAX_TOOL_OUTPUT_CHARS ? output : cut(text)
}
