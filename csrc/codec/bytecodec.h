/* codec/bytecodec.h: what the codec (codec.c) sees of a byte coder (bytecodec.c): the run in progress, which a
 * tracked group's word-model blocks of format 17 share (the line route, docs/format.md §3.8). */
#ifndef NLM_CODEC_BYTECODEC_H
#define NLM_CODEC_BYTECODEC_H

#include "bytemodel/cm.h"
#include "nlm.h"

/* The run in progress (NULL between runs). */
CmModel* bytecoder_run(NlmByteCoder* b);

#endif /* NLM_CODEC_BYTECODEC_H */
