// Preload (`node --require .../loopback.cjs server.js`) that keeps a Node server on the loopback
// interface: every net.Server#listen on a TCP port (http.Server, https.Server and express's
// app.listen all end there) gets host 127.0.0.1, whatever host (or none) the program asked for.
// Test peers such as @modelcontextprotocol/server-everything listen on all interfaces otherwise.
// Listens on a pipe / path / handle are left alone.
"use strict";
const net = require("net");

const LOOPBACK = process.env.LOOPBACK_HOST || "127.0.0.1";
const original = net.Server.prototype.listen;

function isPort(value) {
  return (
    (typeof value === "number" && Number.isInteger(value)) ||
    (typeof value === "string" && value !== "" && /^[0-9]+$/.test(value))
  );
}

net.Server.prototype.listen = function listen(...args) {
  const first = args[0];
  if (first === undefined || first === null || typeof first === "function") {
    // listen() / listen(cb): an ephemeral port on all interfaces by default.
    return original.call(this, { port: 0, host: LOOPBACK }, ...args.filter((a) => typeof a === "function"));
  }
  if (isPort(first)) {
    // listen(port[, host][, backlog][, cb]): replace or insert the host.
    const rest = args.slice(1);
    if (typeof rest[0] === "string" || rest[0] === undefined || rest[0] === null) {
      if (rest.length > 0) rest.shift();
    }
    return original.call(this, Number(first), LOOPBACK, ...rest);
  }
  if (typeof first === "object" && !Array.isArray(first) && first.path === undefined &&
      first.handle === undefined && first.fd === undefined && first._handle === undefined &&
      ("port" in first || "host" in first)) {
    // listen(options[, cb])
    return original.call(this, { ...first, host: LOOPBACK }, ...args.slice(1));
  }
  return original.apply(this, args);
};
