/** `./x.client?script`: a browser script bundled on its own and imported as its text (scripts/workers.ts). */
declare module '*?script' {
  const javascript: string
  export default javascript
}
