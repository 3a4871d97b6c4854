#ifndef MDQ_CINOTIFYTOOLS_SHIMS_H
#define MDQ_CINOTIFYTOOLS_SHIMS_H
// libinotifytools keeps process-global state; only MetadataIndex/System/ may
// import this module, and only one owner may call it at a time.
#include <inotifytools/inotifytools.h>
#include <inotifytools/inotify.h>
#endif
