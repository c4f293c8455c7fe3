// Builds the front end into dist/, which the UI server (web-ui/server) serves. During
// development `npm run dev` proxies /api to a running taas-ui (TAAS_UI_API, default
// http://127.0.0.1:8080).
import { defineConfig } from 'vite';

export default defineConfig({
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 800 },
  server: {
    proxy: { '/api': process.env.TAAS_UI_API ?? 'http://127.0.0.1:8080' },
  },
});
