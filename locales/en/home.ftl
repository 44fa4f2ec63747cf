## The start page (/).

home-title = hookbin · inspect webhooks
home-deleted = The bin and its requests were deleted.
home-heading = See exactly what a webhook sends
home-lead = hookbin gives you a private URL that records every HTTP request sent to it, byte for byte: method, path, query, headers in the order they came, and the body. Watch them arrive live, read them comfortably, and replay them against your own machine.
home-create = Create new URL
# $ttl is a duration-* message, e.g. "7 days".
home-create-hint = No account. The URL and what it receives are deleted after { $ttl }.
home-howto = How to use it
home-step-create = Create a URL. It is the only key to its requests: share it only with the sender. It looks like this:
home-step-paste = Paste it where a provider asks for a webhook or callback URL (Stripe, GitHub, Slack, your own service…), or send something yourself:
home-step-watch = Keep the bin page open: requests appear as they arrive. Open one to see its headers and body, download the exact bytes, or copy it as a curl command aimed at your localhost.
home-your-bin-id = your-bin-id
home-visibility = Who can see the requests
home-visibility-public = Anyone with the URL
home-visibility-private = Private: only with a separate view link (the capture URL cannot read them)
home-recent = Your recent bins
home-recent-hint = Remembered in this browser only.
