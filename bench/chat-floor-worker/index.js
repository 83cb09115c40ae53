// Minimal pass-through worker: forwards the request to UPSTREAM and streams the response back.
export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const target = env.UPSTREAM + url.pathname + url.search
    const headers = new Headers(request.headers)
    headers.delete('host')
    const resp = await fetch(target, {
      method: request.method,
      headers,
      body: request.body,
    })
    return new Response(resp.body, { status: resp.status, headers: resp.headers })
  },
}
