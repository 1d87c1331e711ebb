'use strict';
// The HTTP row's server (bench/harness/hello_server.js): prints {"port"},
// then {"t", "n"} every 50 ms. Runs until SIGTERM.
require('./harness/hello_server').helloServer();
