-- One POST per request, each body distinct: the template's "[<id>]" becomes this run's prefix and a
-- counter. The per-request work is one string concatenation in LuaJIT (no callback into a
-- JavaScript process): a do-nothing server answers several times faster than any server measured.
-- Read from the environment (bench/wrk.ts writes them): HOOKBOT_WRK_TEMPLATE (the body template's
-- file), HOOKBOT_WRK_HEADERS (a file of "name: value" lines), HOOKBOT_WRK_RUN (a prefix unique to
-- this run, so a warm-up's bodies are never repeated by the measured load).
local file = assert(io.open(os.getenv("HOOKBOT_WRK_TEMPLATE"), "rb"))
local template = file:read("*a")
file:close()
local at, to = string.find(template, "[<id>]", 1, true)
assert(at, "the body template has no [<id>] placeholder")
local before, after = string.sub(template, 1, at - 1), string.sub(template, to + 1)
local prefix = os.getenv("HOOKBOT_WRK_RUN") .. "-"

wrk.method = "POST"
for line in io.lines(os.getenv("HOOKBOT_WRK_HEADERS")) do
  local name, value = string.match(line, "^([^:]+): (.*)$")
  if name then wrk.headers[name] = value end
end

local counter = 0
function request()
  counter = counter + 1
  return wrk.format(nil, nil, nil, before .. prefix .. counter .. after)
end
