// GStreamer's WebRTC API is "unstable" in 1.22 and must be asked for; libnice lets the ICE agent be pinned
// to an address (it skips loopback otherwise).
#define GST_USE_UNSTABLE_API 1
#include <gst/gst.h>
#include <gst/sdp/sdp.h>
#include <gst/webrtc/webrtc.h>
#include <nice/agent.h>
