#ifndef MDQ_CGEXIV2_SHIMS_H
#define MDQ_CGEXIV2_SHIMS_H
// gexiv2 (GPL-2.0-or-later), the C interface of Exiv2, for the image
// importer. Only Sources/MetadataImporters imports it, and only the import
// worker links it.
#include <gexiv2/gexiv2.h>
#endif
