// The C side of Duet's GStreamer WebRTC engine: one webrtcbin peer with test-pattern media, behind calls
// Swift can make (no variadic GObject calls, no cast macros). Callbacks arrive on GStreamer threads.
#ifndef DUET_GST_H
#define DUET_GST_H

#include <stddef.h>
#include <stdint.h>

typedef struct DuetPeer DuetPeer;

enum {
    DUET_STATE_ICE_CONNECTION = 0,  // GstWebRTCICEConnectionState
    DUET_STATE_CONNECTION = 1,      // GstWebRTCPeerConnectionState
    DUET_STATE_SIGNALING = 2,       // GstWebRTCSignalingState
    DUET_STATE_GATHERING = 3,       // GstWebRTCICEGatheringState
};

typedef struct {
    void *ctx;
    /// A local candidate (`candidate:…`, no `a=`) for m-line `mline` whose mid is `mid` (may be NULL).
    void (*on_candidate)(void *ctx, unsigned mline, const char *mid, const char *candidate);
    void (*on_state)(void *ctx, int kind, int value);
    /// The answer to request `request`: an SDP for create-offer/answer (already applied locally), NULL for
    /// set-remote; `error` is NULL on success.
    void (*on_reply)(void *ctx, uint64_t request, const char *sdp, const char *error);
} DuetPeerCallbacks;

typedef struct {
    int64_t video_frames;   // decoded video frames
    int64_t audio_packets;  // received audio RTP packets
    int64_t audio_samples;  // decoded audio samples (per channel), counted where `level` measures them
    double audio_level_db;  // RMS of the decoded audio over the last second, dBFS; -100 for silence or none
    double audio_peak_db;   // its highest peak over the last second, dBFS; -100 for silence or none
    char candidate_type[16];  // of the selected pair's local candidate, "" when unknown
    double rtt_ms;
    int has_rtt;
    int video_width;   // of the decoded video, 0 until known
    int video_height;
    // The inbound streams as their pads' caps say (0 / "" until known): webrtcbin 1.22's stats label every
    // inbound-rtp "audio" and leave its codec empty, so call quality tells the streams apart by SSRC.
    uint32_t audio_ssrc, video_ssrc;
    char audio_codec[16], video_codec[16];  // encoding names: "OPUS", "VP8"
    /// webrtcbin's whole `get-stats` reply as JSON (an array of objects, each a stats structure's fields plus its
    /// name as "type"), for call quality; NULL when it did not answer. Freed by `duet_stats_clear`.
    char *report_json;
} DuetStats;

/// Frees what `duet_peer_stats` allocated in `stats` (its report); safe on a zeroed or cleared value.
void duet_stats_clear(DuetStats *stats);

/// Initialises GStreamer once and checks that every element the peer needs exists.
int duet_gst_init(char *error, size_t error_len);

/// Frees what GStreamer keeps for the process's life (its registry, plugins, caches): for a leak checker only, once
/// every peer has been freed, right before the process exits — GStreamer cannot be used again after it. Without it,
/// LeakSanitizer at exit cannot tell GStreamer's own state from a pipeline the shim forgot to unref. Refused while any
/// peer is not yet freed: returns how many are alive (0: GStreamer was deinitialised).
int duet_gst_deinit(void);

/// `audio_first`: m-line order of the offers this peer makes; a fresh session must keep the order the call
/// was first negotiated in, or browsers refuse its offer. `opus_pt`, `vp8_pt`: the payload types it sends with —
/// an offer it answers must carry the same ones, or webrtcbin pairs the offer's m-lines with new receive-only
/// transceivers and sends nothing (Firefox offers Opus 109 and VP8 120, Chromium 111 and 96).
DuetPeer *duet_peer_new(DuetPeerCallbacks callbacks, int audio_only, int audio_first, int opus_pt, int vp8_pt,
                        const char *const *ice_addresses, int n_ice_addresses, int relay_only, char *error, size_t error_len);
/// Mids (comma-separated, in m-line order) this peer's offers must carry: a fresh session keeps the mids the
/// call was negotiated with, or browsers refuse its offer. NULL or empty: webrtcbin's own.
void duet_peer_set_offer_mids(DuetPeer *peer, const char *mids);
/// `turn(s)://user:pass@host:port?transport=udp|tcp`, user and password percent-escaped. Applies to the live peer.
int duet_peer_add_turn(DuetPeer *peer, const char *url);
/// `stun://host:port`: webrtcbin takes one STUN server (gathering a server-reflexive candidate through it).
int duet_peer_set_stun(DuetPeer *peer, const char *url);
void duet_peer_create_offer(DuetPeer *peer, uint64_t request);
void duet_peer_create_answer(DuetPeer *peer, uint64_t request);
void duet_peer_set_remote(DuetPeer *peer, int is_offer, const char *sdp, uint64_t request);
/// NULL `candidate`: end of candidates.
void duet_peer_add_candidate(DuetPeer *peer, unsigned mline, const char *candidate);
/// Blocks until webrtcbin answers (never call from a GStreamer callback). Hold a retain across it when the
/// peer may be freed meanwhile.
void duet_peer_stats(DuetPeer *peer, DuetStats *out);
/// `duet_peer_stats` without webrtcbin's part (candidate type, RTT): counters and the audio level, never blocks.
void duet_peer_counters(DuetPeer *peer, DuetStats *out);
/// Decoded video frames + received audio packets so far: two atomic reads, never blocks.
int64_t duet_peer_inbound(DuetPeer *peer);
/// The PEMs, one after another, of every distinct certificate the other side presented in a DTLS handshake of any
/// of the connection's transports (NULL before any handshake); free it with `duet_string_free`. Never blocks on
/// webrtcbin's thread.
char *duet_peer_remote_certificates(DuetPeer *peer);
void duet_string_free(char *text);
/// Keeps the peer's memory and elements alive past `duet_peer_free` until the matching release.
void duet_peer_retain(DuetPeer *peer);
void duet_peer_release(DuetPeer *peer);
/// Stops media and releases the peer; no callback runs after this returns.
void duet_peer_free(DuetPeer *peer);

#endif
