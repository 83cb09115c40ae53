export default {
  async fetch(request, env) {
    const headers = new Headers(request.headers)
    headers.delete('authorization')
    headers.set(
      'x-svc-context',
      JSON.stringify({
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
      }),
    )
    const response = await env.BACK.fetch(new Request(request, { headers }))
    return response
  },
}
