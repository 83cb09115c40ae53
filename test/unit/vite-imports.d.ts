/**
 * Vite import suffixes used by unit tests inside workerd (there is no file system there):
 * `?inline` loads a binary fixture as a base64 data URL, `?raw` loads a text file as a string.
 */
declare module '*?inline' {
  const dataUrl: string
  export default dataUrl
}

declare module '*?raw' {
  const text: string
  export default text
}
