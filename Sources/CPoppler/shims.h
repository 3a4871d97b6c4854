#ifndef MDQ_CPOPPLER_SHIMS_H
#define MDQ_CPOPPLER_SHIMS_H
// Poppler's GLib interface (GPL-2.0-or-later), for the PDF importer. Only
// Sources/MetadataImporters imports it, and only the import worker links it.
#include <poppler.h>
#endif
