#ifndef MDQ_CFFMPEG_SHIMS_H
#define MDQ_CFFMPEG_SHIMS_H
// FFmpeg's libavformat, libavcodec and libavutil (LGPL-2.1-or-later; Debian
// builds them GPL-2.0-or-later), for the audio and video importer. Only
// Sources/MetadataImporters imports it, and only the import worker links it.
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/dict.h>
#include <libavutil/log.h>

/// AV_NOPTS_VALUE and AV_TIME_BASE are macros Swift does not import.
static inline int64_t mdq_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int64_t mdq_av_time_base(void) { return AV_TIME_BASE; }
/// AVERROR_EOF and AVERROR(e) are macros Swift does not import.
static inline int mdq_averror_eof(void) { return AVERROR_EOF; }
static inline int mdq_averror(int error) { return AVERROR(error); }
#endif
