// zlib (zlib1g-dev): the import store compresses the text it keeps.
#include <zlib.h>
