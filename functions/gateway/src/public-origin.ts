/**
 * The gateway's public origin: what the OAuth issuer, the protected resource (`<origin>/mcp`),
 * the `resource_metadata` challenge and links in answers are built from. PUBLIC_BASE_URL when set;
 * without it, the request's own origin, which a client chooses with the Host header. So without
 * it the gateway answers only requests addressed to a loopback name (a local stack, reachable from
 * this machine alone, and a name no DNS-rebinding page can send): `localhost`, `*.localhost`,
 * `127.0.0.0/8` and `[::1]`, on any port (a local proxy or forwarder on another port keeps working).
 * Any other Host is answered 421 Misdirected Request, so it never becomes the issuer. Deployments
 * set PUBLIC_BASE_URL (`npm run deploy` refuses without it).
 */
import { AppError } from '../../../shared/http/errors'

/** Whether a URL hostname (as `new URL()` normalises it: lower case, IPv6 in brackets) is loopback. */
export function isLoopbackHostname(hostname: string): boolean {
  return (
    hostname === 'localhost' ||
    hostname.endsWith('.localhost') ||
    hostname === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  )
}

/** The public origin of a request to `url`, or 421 when it would come from a non-loopback Host. */
export function publicOrigin(url: URL, configured: string | undefined): string {
  if (configured !== undefined) return configured
  if (isLoopbackHostname(url.hostname)) return url.origin
  throw new AppError(
    421,
    'misdirected_request',
    `This gateway has no PUBLIC_BASE_URL, so it answers only requests addressed to a loopback name (localhost, *.localhost, 127.0.0.1, [::1]), not to ${url.host}. Use http://localhost:${url.port || '80'}, or set PUBLIC_BASE_URL to the URL clients reach it at.`,
  )
}
