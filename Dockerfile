# syntax=docker/dockerfile:1
# Multi-stage build: compile with dev dependencies, ship only production dependencies and dist/.

FROM node:20-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 compiles its native addon when no prebuilt binary matches.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund --loglevel=warn
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
RUN npm run build
# Production dependencies only. `npm prune --omit=dev` alone keeps typescript and ts-node: typeorm names
# ts-node as an optional peer, so npm marks ts-node, typescript and their dependencies "devOptional",
# which --omit=dev does not drop. Without the devDependencies in the manifest they are extraneous and
# go. (--omit=optional is no way out: it would also drop sharp's platform binaries.)
RUN npm pkg delete devDependencies \
 && npm prune --omit=dev --no-audit --no-fund --loglevel=warn \
 && leftover="$(find node_modules -type d \( -path '*node_modules/typescript' -o -path '*node_modules/ts-node' \) -prune)" \
 && if [ -n "$leftover" ]; then echo "dev tools left in the production node_modules: $leftover" >&2; exit 1; fi

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    PORT=3000 \
    DATA_DIR=/data \
    LOG_FORMAT=json
WORKDIR /app
# The real manifest (the build stage's lost its devDependencies): `npm ls --omit=dev` checks against it.
COPY package.json ./package.json
# npm's settings: silent, so that `npm run admin -- …` prints the CLI's JSON alone (no npm banner).
COPY .npmrc ./.npmrc
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# `npm start` and `npm run admin` run it first (prestart/preadmin); without src/ it does nothing.
COPY scripts/ensure-built.js ./scripts/ensure-built.js
# The operator and viewer pages (/console, /watch/...): static files served by src/pages.
COPY public ./public
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/main.js"]
