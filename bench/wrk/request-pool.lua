-- Requests taken in turn from a pool built once before the load starts (bodies signed beforehand,
-- for a server that verifies a signature of each body). HOOKBOT_WRK_POOL names a file of lines
-- "<header name>: <value>\t<header name>: <value>\t...\t\t<body>", one request per line.
local pool = {}
local next_index = 0

function init(args)
  for line in io.lines(os.getenv("HOOKBOT_WRK_POOL")) do
    local head, body = string.match(line, "^(.-)\t\t(.*)$")
    local headers = { ["Host"] = wrk.host .. ":" .. wrk.port }
    for pair in string.gmatch(head, "[^\t]+") do
      local name, value = string.match(pair, "^([^:]+): (.*)$")
      headers[name] = value
    end
    pool[#pool + 1] = wrk.format("POST", wrk.path, headers, body)
  end
  assert(#pool > 0, "the request pool is empty")
end

function request()
  next_index = next_index % #pool + 1
  return pool[next_index]
end
