import { defineConfig } from "vite";

// Plain Vite: esbuild compiles the TSX with Preact's JSX runtime, no plugin.
// `npm run dev` proxies the API to a local `clipforge serve` on port 8080.
export default defineConfig({
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    target: "es2020",
  },
  server: {
    proxy: {
      "/api": "http://127.0.0.1:8080",
      "/media": "http://127.0.0.1:8080",
    },
  },
});
