# Minimal image; the product issue turns it into a multi-stage, non-root image with a health check.
FROM node:22-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY . .
ENTRYPOINT ["node", "bin/hookbot.js"]
