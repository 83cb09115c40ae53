export default {
  async fetch(request, env) {
    const headers = {}
    for (const [name, value] of request.headers) if (name !== 'authorization') headers[name] = value
    const body = await request.text()
    const url = new URL(request.url)
    const answer = await env.BACK.handle({
      method: request.method,
      url: request.url,
      path: url.pathname + url.search,
      headers,
      body,
      context: {
        requestId: 'req_0123456789abcdef',
        identity: {
          tenantId: 'f113ce49-4ea7-47c3-b68c-0f13a0b834d8',
          keyId: 'key_1',
          mode: 'live',
          role: 'owner',
          plan: 'pro',
        },
        maxBodyBytes: 1048576,
        baseUrl: 'http://127.0.0.1:18790',
      },
    })
    return new Response(answer.body, { status: answer.status, headers: answer.headers })
  },
}
