/**
 * A UUID in its textual form (RFC 9562: 8-4-4-4-12 hexadecimal digits, either case), as ids arrive
 * in paths, page cursors, token claims and subjects. Checked before an id reaches a `uuid` column,
 * so malformed input is a clear 4xx or "not found" rather than a database error.
 */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
