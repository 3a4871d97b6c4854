#ifndef MDQ_CZIP_SHIMS_H
#define MDQ_CZIP_SHIMS_H
// libzip (BSD-3-Clause), for the office document and e-book importer. Only
// Sources/MetadataImporters imports it, and only the import worker links it.
#include <zip.h>
#endif
