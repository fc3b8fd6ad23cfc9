# hookbot: multi-stage build, small runtime image, non-root user, health check on /healthz.
#   docker build -t hookbot .
#   docker run -p 3000:3000 -v hookbot-data:/app/data -v $PWD/rules:/app/rules:ro \
#     -v $PWD/config.yml:/app/config.yml:ro -e HOOKBOT_CONFIG=/app/config.yml \
#     -e HOOKBOT_API_TOKEN=... -e HOOKBOT_WEBHOOK_SECRET=... \
#     -e HOOKBOT_STATUS_USERNAME=ops -e HOOKBOT_STATUS_PASSWORD=... hookbot serve
# The image listens on 0.0.0.0 (a published port must reach it), so the status page, /metrics and
# /explain would be open to whoever reaches the port: the bot refuses to start that way without
# status credentials. HOOKBOT_ALLOW_PUBLIC_OPS=true is deliberately not set here: setting it (when a
# proxy or network policy guards the port) is the operator's decision.

# Build: every dependency, then the TypeScript sources compiled to dist/ (npm run build).
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Production dependencies only.
FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:22-bookworm-slim AS runtime
# git: the embedded sandbox keeps real repositories (only used when no server is configured), and the
# merge queue fetches and pushes with it; openssh-client: its ssh, for git.ssh_key_file (the known_hosts
# file then comes through git.ssh_known_hosts_file: the node user has no ~/.ssh of its own).
RUN apt-get update && apt-get install -y --no-install-recommends git openssh-client && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production HOOKBOT_IN_DOCKER=1 HOOKBOT_HOST=0.0.0.0 HOOKBOT_PORT=3000 HOOKBOT_STATE=/app/data/hookbot.json
# A sidecar's heap: the bot's live data is about 30 MB (bounded by the state store's limits), and
# V8 left alone grows its heap to whatever a burst allocated (240 MB RSS after 20,000 deliveries,
# measured). With these limits: 144-150 MB after 100,000 (bench/memory.bench.ts). The inbox's byte
# bound (state.max_pending_bytes, 32 MiB) is chosen to fit this heap, restart included
# (test/state/backlog-heap.test.ts); raise both together for larger backlogs.
ENV NODE_OPTIONS="--max-semi-space-size=4 --max-old-space-size=256"
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
COPY rules ./rules
COPY config.example.yml ./
RUN mkdir -p /app/data && chown -R node:node /app/data && chmod 700 /app/data
USER node
VOLUME ["/app/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.HOOKBOT_PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "dist/cli/run.js"]
CMD ["serve"]
