/* busmodule: a Redis module for TestLiveRedisBus. Loaded with
 *
 *     MODULE LOAD busmodule.so <type> <payload>
 *
 * it broadcasts one cluster bus MODULE message (RedisModule_SendClusterMessage
 * with a NULL target) of the given type and payload, so that the test can
 * capture the CLUSTERMSG_TYPE_MODULE packet a real redis-server builds.
 *
 * It declares the four module API functions it uses itself instead of
 * including redismodule.h: a module receives a context whose first word is
 * the RedisModule_GetApi function, which returns the other functions by
 * name. The module name has the 9 characters moduleTypeEncodeId needs to
 * derive the module_id. */
#include <stddef.h>
#include <stdint.h>

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleString RedisModuleString;

#define MODULE_OK 0
#define MODULE_ERR 1

static int (*GetApi)(const char *name, void *fn);
static void (*SetModuleAttribs)(RedisModuleCtx *ctx, const char *name, int ver, int apiver);
static const char *(*StringPtrLen)(const RedisModuleString *s, size_t *len);
static int (*SendClusterMessage)(RedisModuleCtx *ctx, const char *target, uint8_t type, const char *msg, uint32_t len);

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    GetApi = (int (*)(const char *, void *))((void **)ctx)[0];
    if (GetApi("RedisModule_SetModuleAttribs", &SetModuleAttribs) != MODULE_OK ||
        GetApi("RedisModule_StringPtrLen", &StringPtrLen) != MODULE_OK ||
        GetApi("RedisModule_SendClusterMessage", &SendClusterMessage) != MODULE_OK)
        return MODULE_ERR;
    SetModuleAttribs(ctx, "shardisbm", 1, 1);
    if (argc != 2) return MODULE_ERR;

    size_t n;
    const char *p = StringPtrLen(argv[0], &n);
    unsigned type = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9' || type > 25) return MODULE_ERR;
        type = type * 10 + (unsigned)(p[i] - '0');
    }
    if (n == 0 || type > 255) return MODULE_ERR;

    p = StringPtrLen(argv[1], &n);
    return SendClusterMessage(ctx, NULL, (uint8_t)type, p, (uint32_t)n) == MODULE_OK ? MODULE_OK : MODULE_ERR;
}
