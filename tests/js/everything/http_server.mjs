// The MCP reference server (@modelcontextprotocol/server-everything, TypeScript SDK) in its
// Streamable HTTP mode, on 127.0.0.1 only: `node http_server.mjs PORT`.
// Its own entry listens on every interface; the tests may only use loopback, so the listen
// call is given the host before the server module is loaded.
import http from "node:http";

process.env.PORT = process.argv[2];
const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (port, ...rest) {
  const callbacks = rest.filter((arg) => typeof arg === "function");
  return listen.call(this, port, "127.0.0.1", ...callbacks);
};
console.log = (...args) => console.error(...args); // keep stdout quiet
await import("@modelcontextprotocol/server-everything/dist/transports/streamableHttp.js");
