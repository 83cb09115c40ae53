/**
 * The local stack has no PUBLIC_BASE_URL, so the Host header would be its OAuth issuer and the
 * protected resource of /mcp: it must answer only its loopback names, and 421 Misdirected Request
 * (the usual error body, with a request id) to any other Host, DNS-rebinding names included.
 */
import http from 'node:http'
import { describe, expect, inject, it } from 'vitest'

const stack = inject('stack')
const target = new URL(stack.baseUrl)

/** A GET with the Host header as given (fetch would not let a test choose it). */
function getWithHost(
  path: string,
  host: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.hostname, port: target.port, path, method: 'GET', headers: { host } },
      (res) => {
        let body = ''
        res.on('data', (d: Buffer) => {
          body += d.toString()
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      },
    )
    req.on('error', reject)
    req.end()
  })
}

describe(`the Host header without PUBLIC_BASE_URL (${stack.kind})`, () => {
  it('loopback names are answered, and each becomes the issuer and resource as the client named it', async () => {
    for (const host of [
      target.host,
      `localhost:${target.port}`,
      `svc.localhost:${target.port}`,
      `[::1]:${target.port}`,
    ]) {
      const metadata = await getWithHost('/.well-known/oauth-authorization-server', host)
      expect(metadata.status, `${host}: ${metadata.body}`).toBe(200)
      expect(JSON.parse(metadata.body).issuer).toBe(`http://${host}`)
      const resource = await getWithHost('/.well-known/oauth-protected-resource/mcp', host)
      expect(resource.status, host).toBe(200)
      expect(JSON.parse(resource.body).resource).toBe(`http://${host}/mcp`)
    }
  })

  it('any other Host is 421 misdirected_request, on public and credential routes alike', async () => {
    for (const host of [
      'evil.example',
      `evil.example:${target.port}`,
      `10.0.0.7:${target.port}`,
      'localhost.evil.example',
    ]) {
      for (const path of [
        '/.well-known/oauth-authorization-server',
        '/.well-known/oauth-protected-resource/mcp',
        '/svc/models',
        '/mcp',
        '/healthz',
      ]) {
        const res = await getWithHost(path, host)
        expect(res.status, `${host} ${path}: ${res.body}`).toBe(421)
        expect(res.headers['x-request-id']).toBeTruthy()
        const { error } = JSON.parse(res.body) as { error: { code: string; message: string; type: string } }
        expect(error.code).toBe('misdirected_request')
        expect(error.message).toContain(new URL(`http://${host}`).host)
        expect(error.message).toContain('PUBLIC_BASE_URL')
        expect(res.body).not.toContain(`"issuer"`)
      }
    }
  })
})
