/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_list: the intrusive list: order of head and tail inserts, container_of from a member
 * that is not the first, removal during foreach_safe, removing a node twice, and moving a whole
 * list onto another head.
 */
#include "core/list.h"

#include <stdlib.h>

#include "testlib.h"

typedef struct item {
    int value;
    list_t link; /* deliberately not the first member */
} item_t;

/* Writes the values of head into out (at most cap) and returns how many there are. */
static int values(list_t *head, int *out, int cap)
{
    item_t *it;
    int n = 0;
    list_foreach(it, head, item_t, link) {
        if (n < cap)
            out[n] = it->value;
        n++;
    }
    return n;
}

static void empty_list(void)
{
    list_t head = LIST_INIT(head), other;
    int v[1];
    list_init(&other);
    CHECK(list_empty(&head));
    CHECK(list_empty(&other));
    CHECK(values(&head, v, 1) == 0);
}

static void head_and_tail_inserts_keep_order(void)
{
    list_t head;
    item_t a = {1, {0}}, b = {2, {0}}, c = {3, {0}};
    int v[3];
    list_init(&head);
    list_insert_tail(&head, &b.link);
    list_insert_head(&head, &a.link);
    list_insert_tail(&head, &c.link);
    CHECK(!list_empty(&head));
    CHECK(values(&head, v, 3) == 3 && v[0] == 1 && v[1] == 2 && v[2] == 3);
    CHECK(list_first_entry(&head, item_t, link) == &a);
    CHECK(container_of(&c.link, item_t, link) == &c);
    list_remove(&b.link);
    CHECK(values(&head, v, 3) == 2 && v[0] == 1 && v[1] == 3);
    CHECK(list_empty(&b.link)); /* a removed node is an empty list ... */
    list_remove(&b.link);       /* ... so removing it again changes nothing */
    CHECK(values(&head, v, 3) == 2);
    list_remove(&a.link);
    list_remove(&c.link);
    CHECK(list_empty(&head));
}

static void foreach_safe_may_free(void)
{
    list_t head;
    item_t *it, *tmp;
    int v[10], n = 0;
    list_init(&head);
    for (int i = 0; i < 10; i++) {
        item_t *x = malloc(sizeof(*x));
        if (!x)
            return;
        x->value = i;
        list_insert_tail(&head, &x->link);
    }
    list_foreach_safe(it, tmp, &head, item_t, link) { /* drop the odd ones */
        if (it->value % 2) {
            list_remove(&it->link);
            free(it);
        }
    }
    CHECK(values(&head, v, 10) == 5 && v[0] == 0 && v[4] == 8);
    list_foreach_safe(it, tmp, &head, item_t, link) {
        list_remove(&it->link);
        free(it);
        n++;
    }
    CHECK(n == 5 && list_empty(&head));
}

static void take_all_moves_in_order(void)
{
    list_t src, dst;
    item_t a = {1, {0}}, b = {2, {0}};
    int v[2];
    list_init(&src);
    list_take_all(&dst, &src); /* an empty list gives an empty head */
    CHECK(list_empty(&dst) && list_empty(&src));
    list_insert_tail(&src, &a.link);
    list_insert_tail(&src, &b.link);
    list_take_all(&dst, &src);
    CHECK(list_empty(&src));
    CHECK(values(&dst, v, 2) == 2 && v[0] == 1 && v[1] == 2);
    CHECK(a.link.prev == &dst && b.link.next == &dst);
    list_remove(&a.link);
    list_remove(&b.link);
    CHECK(list_empty(&dst));
}

int main(void)
{
    RUN(empty_list);
    RUN(head_and_tail_inserts_keep_order);
    RUN(foreach_safe_may_free);
    RUN(take_all_moves_in_order);
    return testlib_done();
}
